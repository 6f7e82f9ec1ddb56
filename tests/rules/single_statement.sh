#!/usr/bin/env bash
# The execution rules are written once, in schedules/execution_rules.* (see
# docs/execution.md), and executed abstractly once, in schedules/detail/abstract_execution.cpp.
# This test greps the C++/CUDA sources for the private copies the executors used to keep,
# and checks that each executor uses the rules module.
#   tests/rules/single_statement.sh [SOURCE_DIR]
# What it greps (extended regexes), in every source file outside tests/ and
# schedules/execution_rules.* (schedules/ included: the validator, the NCCL-order check,
# the trace checker):
#   a program index         struct ProgramIndex | index_program(   (only the rules define one)
#   per-stream op lists     stream_ops[...].push_back | stream_ops_[ | stream_prev_
#   collective numbering    group_seq | ordinal | sequence_of_ | channel_ops_ |
#                           next[...]++ / next_seq[...]++ (counting ops per channel)
#   send/recv matching      send_head | recv_head | sends_started | recvs_started (FIFO pairing)
#   validator/trace copies  coll_cache_ | p2p_cache_ | CollectiveRef | by_channel
#   the rendezvous          arrived[...] == / < / >= ...members or ...needed (use
#                           all_members_reached)
# and, outside schedules/detail/abstract_execution.cpp, a fixpoint loop `while (sweep(`
# (a second abstract executor).
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
patterns='struct ProgramIndex|index_program\(|stream_ops\[[^]]*\]\.push_back|stream_ops_\[|stream_prev_|group_seq|\bordinal\b|sequence_of_|channel_ops_|\bnext(_seq)?\[.*\]\+\+|send_head|recv_head|sends_started|recvs_started|coll_cache_|p2p_cache_|CollectiveRef|by_channel|arrived(\.size\(\)\)?|\[[^]]*\]) *(==|<|>=) *[^;]*(members|needed)'
excluded='^(tests/|build/|schedules/execution_rules\.)'
files=$(git ls-files -- '*.cpp' '*.hpp' '*.cu' 2>/dev/null | grep -v -E "$excluded" || true)
if [ -z "$files" ]; then # not a git checkout: every source file
  files=$(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \) -print |
    sed 's|^\./||' | grep -v -E "$excluded")
fi
failed=0
# shellcheck disable=SC2086 # file names have no spaces
if hits=$(grep -n -E "$patterns" $files); then
  echo "rules_single_statement: private copies of the execution rules outside schedules/execution_rules.*:"
  echo "$hits"
  failed=1
fi
# shellcheck disable=SC2086
if hits=$(grep -n -E 'while \(sweep\(' $files | grep -v '^schedules/detail/abstract_execution\.cpp:'); then
  echo "rules_single_statement: a second abstract executor outside schedules/detail/abstract_execution.cpp:"
  echo "$hits"
  failed=1
fi
for f in sim/detail/executor.hpp backend/executor.cpp backend/cpu_device.cpp schedules/validate.cpp \
  schedules/detail/abstract_execution.cpp schedules/trace_check.cpp sim/detail/executor.cpp; do
  if ! grep -q '#include "schedules/execution_rules.hpp"' "$f"; then
    echo "rules_single_statement: $f does not use schedules/execution_rules.hpp"
    failed=1
  fi
done
n=$(echo "$files" | wc -w)
[ "$failed" = 0 ] && echo "rules_single_statement: $n source files free of private program indexes, numberings, matchings, rendezvous and abstract executors"
exit "$failed"
