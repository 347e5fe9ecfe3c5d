"""Op conformance: the engine-vs-PyTorch op registry, the op matrix, the differential fuzzer
and the float64 third opinion. The per-op facts all come from the primitives' registrations
(harness/engine/ops/); this package only reads them.

- `registry`: `PAIRS`, the checks of every engine op (and variants), spelled once for both sides.
- `divergences`: the table of declared, reasoned divergences ("fail when they vanish").
- `cells`: one (op, dtype, shape, value set) run on both sides, forward and VJP compared.
- `matrix`: every op x dtype, the coverage table and out/ops.json (`python -m harness.opmatrix`).
- `fuzz`: Hypothesis-drawn programs over the op set (`python -m harness.opmatrix.fuzz`).
- `opinion`: which side is closer to float64 when float32 results disagree.
- `inject`: flip a backward rule's sign for a while (to show the checks catch it).
- `burn_api`: burn's public API names (read from its source into burn_api.json) against the
  engine's: present, left out with a reason (burn_api_reasons.toml) or missing (`make api`).
"""
