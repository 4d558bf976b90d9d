"""The steps of the query chain, one module each: its pure logic over one query's candidates,
and the Beam transform that wraps it; `models` holds the records that flow between them. The
Beam support they share (per-query DoFns, dead letters, counters) is in `stages.support`."""
