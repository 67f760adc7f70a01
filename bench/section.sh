# Sourced by the bench scripts that write one section of BENCHMARKS.md.
# replace_section NUMBER SECTION OUTPUT: OUTPUT with its section "## NUMBER." replaced by the
# file SECTION, in its place (appended when OUTPUT has none); every other section stays.
replace_section() {
  local number=$1 section=$2 output=$3
  [ -f "$output" ] || return 0
  awk -v header="## $number." -v section="$section" '
    function put() { while ((getline line < section) > 0) print line; placed = 1 }
    index($0, header) == 1 { put(); skip = 1; next }
    /^## / { skip = 0 }
    !skip { print }
    END { if (!placed) { print ""; put() } }' "$output" >"$output.new"
  mv "$output.new" "$output"
}
