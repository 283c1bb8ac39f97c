#!/usr/bin/env python3
"""Expected MQAR accuracy of a model that knows which values are in the context but not which key
each belongs to, and answers every query with the most frequent value (ties: uniform).

The suite's MQAR cells draw P = 8 distinct keys and give each a value uniform over V = 64 (with
replacement); a query asks for one of the P keys. If the values' largest multiplicity is m, every
most-frequent value owns m of the P pairs, so the guess is right with probability m / P. The
expectation is summed exactly over the partitions of P (the multiplicity patterns)."""
from fractions import Fraction
from math import factorial, perm
from collections import Counter


def partitions(n, largest=None):
    largest = n if largest is None else largest
    if n == 0:
        yield []
        return
    for k in range(min(n, largest), 0, -1):
        for rest in partitions(n - k, k):
            yield [k] + rest


def value_guess(P=8, V=64):
    total, expected = Fraction(0), Fraction(0)
    for parts in partitions(P):
        # value choices: an ordered choice of distinct values, one per part, divided by the
        # orderings of equal parts; then the ways to assign the P pairs to those parts.
        ways = perm(V, len(parts))
        for same in Counter(parts).values():
            ways //= factorial(same)
        assign = factorial(P)
        for k in parts:
            assign //= factorial(k)
        p = Fraction(ways * assign, V**P)
        total += p
        expected += p * Fraction(max(parts), P)
    assert total == 1
    return expected


if __name__ == "__main__":
    print(f"{float(value_guess()):.4f}")
