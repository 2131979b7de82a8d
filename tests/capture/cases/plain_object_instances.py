# capture: call=f inputs=x:f32[2,3]
# Instances of the user's plain classes built in traced code: __init__ inlined, attributes
# stored and read back, methods, properties, staticmethods and isinstance, as in Python.
class Box:
    scale = 2.0

    def __init__(self, a, b=None):
        self.a = a
        self.b = b

    @property
    def total(self):
        return self.a + (0 if self.b is None else self.b)

    @staticmethod
    def double(t):
        return t * 2

    def set(self, t):
        self.b = t
        return self


class Holder:
    def __init__(self):
        self.items = []


def f(x):
    box = Box(x)
    first = box.total * box.scale
    box.set(x.exp())
    h = Holder()
    h.items.append(box.total)
    h.extra = Box.double(x)
    return first, h.items[0], h.extra + box.double(box.a), isinstance(box, Box), type(h) is Holder
