# Every generated page, after swift-argument-parser's generate-manual:
# - A subcommand's page names itself `.Nm "touchgate secret get"`, which whatis and
#   apropos (lexgrog) cannot index. Its NAME line becomes the page's own name,
#   touchgate.secret.get (what `man` opens), and every later bare `.Nm` (the synopsis)
#   keeps the words as typed, as does the exit status sentence (`.Ex -std`).
# - An empty line inside a description is a paragraph break for the generator and a
#   warning for groff: it becomes `.Pp`.
!named && /^\.Nm "[^"]* [^"]*"$/ {
	words = substr($0, 5)
	name = substr(words, 2, length(words) - 2)
	gsub(/ /, ".", name)
	print ".Nm " name
	named = 1
	next
}
/^\.Nm "/ { named = 1 }
named && words != "" && /^\.Nm$/ { print ".Nm " words; next }
named && words != "" && /^\.Ex -std$/ { print ".Ex -std " words; next }
/^$/ { print ".Pp"; next }
{ print }
