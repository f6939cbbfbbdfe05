#!/usr/bin/env bash
# Size is a budget (STYLE.md rule 15): lines per area, and every file past 600 lines, which must justify itself.
cd "$(dirname "$0")/.."
for d in src/ir src/codegen src/runtime src/env src/search src/server src/cli src/python_module python/kforge tests bench; do
  n=$(find "$d" -name '*.cpp' -o -name '*.h' -o -name '*.py' -o -name '*.inc' | xargs cat 2>/dev/null | wc -l)
  printf '%-20s %6d lines\n' "$d" "$n"
done
find src python tests -name '*.cpp' -o -name '*.h' -o -name '*.py' | xargs wc -l | awk '$2 != "total" && $1 > 600 {print "over 600 lines: " $2 " (" $1 ")"}'
