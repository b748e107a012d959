"""scripts/bench-go's parts: common (settings, logging), servers (what runs
and how it is built), load (wrk, CPU accounting, waiting for quiet), report
(the tables, the targets, docs/benchmarks.md's Go section)."""
