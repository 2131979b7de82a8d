# capture: call=f inputs=x:f32[3,4]
# Assigning into a view writes into its base, and the base's other live views see it.
def f(x):
    a = x * 1.0
    row = a[1]
    col = a[:, 2]
    row[0] = 5.0
    col[1:] = -1.0
    a.T[3, 0] = 7.0
    return a, row, col
