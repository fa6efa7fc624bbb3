from calc import old_total

print(old_total([1, 2]))
