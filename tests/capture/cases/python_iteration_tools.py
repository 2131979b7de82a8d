# capture: call=f inputs=x:f32[3],y:f32[3]
# iter/next (one iterator shared with a for loop), map, filter, itertools.chain,
# functools.reduce with operator.add, list.clear and tuple concatenation, on tensors.
import functools
import itertools
import operator

import torch


def f(x, y):
    parts = [x, y, x * 2, y * 3]
    it = iter(parts)
    first = next(it)
    rest = [p - first for p in it]  # continues after `first`
    missing = next(it, None)  # exhausted: the default
    chained = list(itertools.chain([first], rest, ()))
    doubled = list(map(lambda t: t * 2, chained))
    kept = list(filter(lambda i: i % 2 == 0, range(5)))
    total = functools.reduce(operator.add, doubled)
    items = [1, 2, 3]
    items.clear()
    shape = () + x.shape + ()
    return total * len(kept), len(items) + shape[0], missing is None
