#!/usr/bin/env bash
# One night of rag-evidence: bring the store to the documents, then recompute the evidence of a
# standing set of queries and keep what changed. What docs/scheduled-jobs.md's cron line runs.
#
#   examples/nightly.sh CONFIG DOCS QUERIES RUNS_DIR [RUN_ID]
#
# RUN_ID defaults to today's date (YYYY-MM-DD). Everything of one night lands in
# RUNS_DIR/RUN_ID/: index.json (what index did), changed.jsonl (the queries whose evidence
# changed since the last finished night), all.jsonl (every query's evidence: the next night's
# --previous), dead-letters.jsonl, run.json (the run's counts) and nightly.log. The first
# night needs nothing prepared: every query is then new.
#
# Exit status, for the scheduler: 0 done; 1 done, but some chunks failed to index (they keep
# their previous version and are tried again next night) or more queries than
# MAX_DEAD_LETTERS (default 5%) failed; 2 nothing done, retry later (a config error, an input
# that cannot be read, another job holding the store); 3 crashed (see nightly.log).
#
# RAG_EVIDENCE is the command to call (default: rag-evidence on PATH).
set -uo pipefail

if [ $# -lt 4 ] || [ $# -gt 5 ]; then
    echo "usage: $0 CONFIG DOCS QUERIES RUNS_DIR [RUN_ID]" >&2
    exit 2
fi
config=$1 docs=$2 queries=$3 runs=$4 run_id=${5:-$(date +%F)}
read -r -a rag <<< "${RAG_EVIDENCE:-rag-evidence}"
night="$runs/$run_id"
mkdir -p "$night" || exit 2
exec > >(tee -a "$night/nightly.log") 2>&1

# The last night before this one that finished: its snapshot has a manifest.
previous=""
for folder in $(ls -1 "$runs" | LC_ALL=C sort); do
    if [[ "$folder" < "$run_id" ]] && [ -e "$runs/$folder/all.jsonl.manifest.json" ]; then
        previous="$runs/$folder/all.jsonl"
    fi
done
if [ -z "$previous" ]; then
    echo "nightly $run_id: no earlier finished night in $runs: every query counts as new"
    previous="$night/.no-previous-night.jsonl"
    : > "$previous"
else
    echo "nightly $run_id: comparing with $previous"
fi

# Index: documents gone from DOCS are removed from the store (--cleanup full), so their chunks
# stop being served; a document that could not be read keeps its chunks.
"${rag[@]}" index --config "$config" --docs "$docs" --cleanup full \
    --summary "$night/index.json"
indexed=$?
if [ "$indexed" -ne 0 ] && [ "$indexed" -ne 1 ]; then
    echo "nightly $run_id: index exited $indexed; no evidence computed"
    exit "$indexed"
fi

"${rag[@]}" run --config "$config" --queries "$queries" --out "$night/changed.jsonl" \
    --previous "$previous" --snapshot "$night/all.jsonl" \
    --dead-letter "$night/dead-letters.jsonl" --summary "$night/run.json" \
    --max-dead-letters "${MAX_DEAD_LETTERS:-5%}"
ran=$?
status=$(( ran > indexed ? ran : indexed ))
echo "nightly $run_id: index exited $indexed, run exited $ran: exit $status"
exit "$status"
