def old_total(xs):
    return sum(xs)
