# The failed points of a TAP stream as tap prints it: every "not ok" line that is not a TODO or
# SKIP, indented as tap nested it, with the telling parts of its YAML diagnostics (where, the
# first lines of a diff, how a test file ended).
function indent(s) { match(s, /^[[:space:]]*/); return RLENGTH }
/^[[:space:]]*not ok / && !/# (TODO|SKIP)/ { print; yaml = 1; diff = 0; next }
/^[[:space:]]*not ok / || /^[[:space:]]*ok / || /^[[:space:]]*# Subtest/ { yaml = 0; diff = 0; next }
yaml && diff > 0 && /^[[:space:]]*$/ { next }
yaml && diff > 0 && indent($0) > diffAt { print; diff--; next }
yaml { diff = 0 }
yaml && /^[[:space:]]*diff: [|>]/ { print; diff = 8; diffAt = indent($0); next }
yaml && /^[[:space:]]*(found|wanted|message|fileName|lineNumber|exitCode|signal|expired|timeout|error):/ { print }
