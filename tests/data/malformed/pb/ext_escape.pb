j
location../../x.binp