
ByJDsæ“¿ä@7DTπ