"""Op conformance: the engine-vs-PyTorch op registry, the op matrix, the differential fuzzer
and the float64 third opinion.

- `registry`: `PAIRS`, one `OpPair` per engine op (and variants), spelled once for both sides.
- `divergences`: the one table of declared, reasoned divergences ("fail when they vanish").
- `matrix`: op x dtype x shape x value set, forward and VJP (`python -m harness.ops`).
- `fuzz`: Hypothesis-drawn programs over the op set (`python -m harness.ops.fuzz`).
- `opinion`: which side is closer to float64 when float32 results disagree.
- `inject`: flip a backward rule's sign for a while (to show the checks catch it).
"""
