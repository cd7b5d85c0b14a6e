ByJ0ìØB¾êaB¦£™BØÊVA+B:i<Bi(Bú5SBÊ†$BW•­A™¼ZB½
ðA