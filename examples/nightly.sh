#!/usr/bin/env bash
# One night of rag-evidence: bring the store to the documents, then recompute the evidence of a
# standing set of queries and keep what changed. What docs/scheduled-jobs.md's cron line runs.
#
#   examples/nightly.sh CONFIG DOCS QUERIES RUNS_DIR [RUN_ID]
#
# RUN_ID defaults to today's date (YYYY-MM-DD); any name of a folder will do (no "/", no
# "..", no leading "." or "-"). The night compared with is the last one that finished, by
# the time it finished, not by its name. Everything of one night lands in
# RUNS_DIR/RUN_ID/: index.json (what index did; index.2.json... for a night run again),
# changed.jsonl (the queries whose evidence
# changed since the last finished night), all.jsonl (every query's evidence: the next night's
# --previous), dead-letters.jsonl, run.json (the run's counts) and nightly.log. The first
# night needs nothing prepared: every query is then new.
#
# Exit status, for the scheduler: 0 done; 1 done, but some chunks failed to index (they keep
# their previous version and are tried again next night) or more queries than
# MAX_DEAD_LETTERS (default 5%) failed; 2 nothing done, retry later (a config error, an input
# that cannot be read, another job holding the store); 3 crashed (see nightly.log).
#
# RAG_EVIDENCE is the command to call (default: rag-evidence on PATH); MAX_WALL_TIME (such as
# 2h) cancels a run still going after it (exit 3), so a run hung on an engine never blocks the
# next night.
set -uo pipefail

if [ $# -lt 4 ] || [ $# -gt 5 ]; then
    echo "usage: $0 CONFIG DOCS QUERIES RUNS_DIR [RUN_ID]" >&2
    exit 2
fi
config=$1 docs=$2 queries=$3 runs=$4 run_id=${5:-$(date +%F)}

# RUN_ID names a folder inside RUNS_DIR, nothing else: no path, no hidden name, no control
# character (spaces are fine).
if [ -z "$run_id" ] || [[ "$run_id" == *"/"* || "$run_id" == .* || "$run_id" == -* ||
                         "$run_id" == *".."* || "$run_id" =~ [[:cntrl:]] ]]; then
    printf 'nightly: RUN_ID %q must name a folder inside RUNS_DIR: no "/", no "..", no leading "." or "-", no control character\n' "$run_id" >&2
    exit 2
fi
read -r -a rag <<< "${RAG_EVIDENCE:-rag-evidence}"
night="$runs/$run_id"
mkdir -p -- "$night" || exit 2
exec > >(tee -a "$night/nightly.log") 2>&1

# The last night that finished, other than this one: the newest snapshot manifest (a run
# writes it last, so its modification time is the night's end), whatever the nights' names.
previous=""
newest=""
for manifest in "$runs"/*/all.jsonl.manifest.json; do
    [ -f "$manifest" ] || continue
    [ "$manifest" -ef "$night/all.jsonl.manifest.json" ] && continue
    if [ -z "$newest" ] || [ "$manifest" -nt "$newest" ]; then
        newest=$manifest
    fi
done
if [ -n "$newest" ]; then
    previous="${newest%.manifest.json}"
fi
if [ -z "$previous" ]; then
    echo "nightly $run_id: no earlier finished night in $runs: every query counts as new"
    previous="$night/.no-previous-night.jsonl"
    : > "$previous"
else
    echo "nightly $run_id: comparing with $previous"
fi

# Index: documents gone from DOCS are removed from the store (--cleanup full), so their chunks
# stop being served; a document that could not be read keeps its chunks. A night run again
# (after a kill) keeps what each attempt did: the first in index.json, the next in
# index.2.json, ... (a second attempt finds the changes committed and reports none).
index_summary="$night/index.json"
attempt=1
while [ -e "$index_summary" ]; do
    attempt=$((attempt + 1))
    index_summary="$night/index.$attempt.json"
done
"${rag[@]}" index --config "$config" --docs "$docs" --cleanup full \
    --summary "$index_summary"
indexed=$?
if [ "$indexed" -ne 0 ] && [ "$indexed" -ne 1 ]; then
    echo "nightly $run_id: index exited $indexed; no evidence computed"
    exit "$indexed"
fi

"${rag[@]}" run --config "$config" --queries "$queries" --out "$night/changed.jsonl" \
    --previous "$previous" --snapshot "$night/all.jsonl" \
    --dead-letter "$night/dead-letters.jsonl" --summary "$night/run.json" \
    --max-dead-letters "${MAX_DEAD_LETTERS:-5%}" ${MAX_WALL_TIME:+--max-wall-time "$MAX_WALL_TIME"}
ran=$?
status=$(( ran > indexed ? ran : indexed ))
echo "nightly $run_id: index exited $indexed, run exited $ran: exit $status"
exit "$status"
