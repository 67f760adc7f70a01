# Adds the hand-written sections of man/extra/NAME.mdoc to the page swift-argument-parser
# made: the part after "@before-exit" before EXIT STATUS (ENVIRONMENT, FILES), the part
# after "@exit" in place of the generic ".Ex -std", the part after "@before-see-also"
# before SEE ALSO (EXAMPLES; at the end of a page that has none). Run: awk -v extra=man/extra/NAME.mdoc -f man/extend.awk PAGE
BEGIN {
    part = ""
    while ((getline line < extra) > 0) {
        if (line ~ /^\.\\" @before-exit/) { part = "exit-before"; continue }
        if (line ~ /^\.\\" @exit/) { part = "exit"; continue }
        if (line ~ /^\.\\" @before-see-also/) { part = "see-also"; continue }
        if (part != "") text[part] = text[part] line "\n"
    }
}
/^\.Sh "EXIT STATUS"/ { printf "%s", text["exit-before"]; print; next }
/^\.Ex -std/ && text["exit"] != "" { printf "%s", text["exit"]; next }
/^\.Sh "SEE ALSO"/ { printf "%s", text["see-also"]; text["see-also"] = ""; print; next }
{ print }
END { printf "%s", text["see-also"] }
