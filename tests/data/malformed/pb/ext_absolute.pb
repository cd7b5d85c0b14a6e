j
location/etc/passwdp