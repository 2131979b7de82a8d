# capture: call=f inputs=a:i64[2,5],m:i64[2,5]
def f(a, m):
    return (a & 1) | (m << 1), a >> 1
