Bej
locationext.binj
offset8j
length12p