from src.dates import parse_date

print(parse_date("2026-01-02"))
