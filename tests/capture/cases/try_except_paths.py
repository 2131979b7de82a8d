# capture: call=f inputs=x:f32[2,3]
# Exceptions raised and handled in traced code: a raise caught by its type, a KeyError from a
# dict, an AttributeError from getattr, a bare re-raise caught further out, finally blocks, an
# exception leaving a `with` block, and one that does not match the first except clause.
import contextlib
import torch


def check(n):
    if n > 2:
        raise ValueError("too big")
    return n


class Box:
    pass


@contextlib.contextmanager
def scope():
    yield


def inner(d):
    try:
        return d["missing"]
    except KeyError:
        raise


def f(x):
    try:
        k = check(3)
    except ValueError as e:
        k = -1 if "big" in str(e) else 0
    try:
        y = {"a": 1.0}["b"]
    except KeyError:
        y = 2.0
    try:
        z = Box().weight
    except AttributeError:
        z = 0.5
    try:
        w = inner({})
    except (TypeError, KeyError):
        w = 3.0
    finally:
        x = x + 1
    try:
        with scope():
            raise IndexError("in with")
    except IndexError:
        w = w + 1
    try:
        try:
            raise KeyError("k")
        except ValueError:
            w = -100.0
    except KeyError:
        w = w * 2
    return x * k + y + z + w
