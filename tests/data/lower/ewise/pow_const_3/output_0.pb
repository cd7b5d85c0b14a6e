ByJÒvxÁ‚¶’AaC’Á
Y«A…/;t³A