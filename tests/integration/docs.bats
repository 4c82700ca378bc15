#!/usr/bin/env bats
# The man pages and the shell completions against `sbx --help`: every
# command and every option that the help prints must be documented and
# completed, and the completions must offer nothing the help does not know.
# Nothing here needs root, a runtime or a store: `--help` touches none.
#
# The bash completion is exercised for real (sourced, then called as bash
# calls it); for zsh and fish the files are checked by reading them, plus
# their shells' syntax check and, for fish, real completion. The roff pages
# are regenerated with go-md2man and compared with the committed ones. A
# check whose shell or converter is missing skips, visibly, and fails under
# SBX_TEST_STRICT=1 (CI installs zsh, fish and go-md2man:
# contrib/setup-debian.sh).

load ../helpers/skip

setup_file() {
	export SBX_BIN=${SBX_BIN:-$PWD/sbx}
	export SBX_SRCDIR=${SBX_SRCDIR:-$PWD}
}

setup() {
	BASH_COMP=$SBX_SRCDIR/completions/sbx.bash
	ZSH_COMP=$SBX_SRCDIR/completions/_sbx
	FISH_COMP=$SBX_SRCDIR/completions/sbx.fish
	MAN=$SBX_SRCDIR/man
}

# --- what --help says ------------------------------------------------------

# The commands of `sbx --help`, one a line.
help_commands() {
	"$SBX_BIN" --help | awk '/^Commands:/ { f = 1; next } /^$/ { f = 0 } f { print $1 }'
}

# The options of a help text on stdin (after the line HEADER), one a line,
# as "LONG SHORT" (SHORT empty when there is none).
help_options() {
	awk -v header="$1" '$0 == header { f = 1; next } /^$/ { f = 0 } f' |
		sed -nE 's/^  (-([A-Za-z0-9]), )?[[:space:]]*--([a-z0-9][a-z0-9-]*).*/\3 \2/p'
}

command_options() {
	"$SBX_BIN" "$1" --help | help_options 'Options:'
}

global_options() {
	"$SBX_BIN" --help | help_options 'Global options:'
}

# "--long" and "-s" of an options list, one a line, sorted.
option_words() {
	while read -r long short; do
		printf -- '--%s\n' "$long"
		[[ -z $short ]] || printf -- '-%s\n' "$short"
	done | LC_ALL=C sort
}

# --- helpers -------------------------------------------------------------

# Completes with completions/sbx.bash as bash does: the arguments are the
# words of the line, the last one the word being completed. Prints the
# candidates, one a line, sorted.
bash_complete() {
	bash --norc --noprofile -c '
		source "$1" || exit 1
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		_sbx 2>/dev/null
		printf "%s\n" "${COMPREPLY[@]}"' bash_complete "$BASH_COMP" "$@" | sed '/^$/d' | LC_ALL=C sort
}

# The text of the zsh completion that handles command $1: its case arm,
# and the arrays (local -a NAME=( ... )) the arm uses.
zsh_arm() {
	local arm
	arm=$(awk -v cmd="$1" '
		!f {
			line = $0
			gsub(/[[:space:]]/, "", line)
			if (line ~ /\)$/) {
				n = split(substr(line, 1, length(line) - 1), names, "|")
				for (i = 1; i <= n; i++)
					if (names[i] == cmd) f = 1
			}
		}
		f { print }
		f && /;;/ { exit }' "$ZSH_COMP")
	printf '%s\n' "$arm"
	local name
	for name in $(grep -oE '\$[a-z_]+' <<<"$arm" | tr -d '$' | sort -u); do
		awk -v name="$name" '
			$0 ~ "local -a " name "=\\(" { f = 1 }
			f { print }
			f && /^[[:space:]]*\)[[:space:]]*$/ { exit }' "$ZSH_COMP"
	done
}

# The fish completion lines that apply to command $1: no condition, or
# __sbx_opts_for with no command (every command), or a condition naming it.
fish_lines() {
	grep -E '^complete -c sbx ' "$FISH_COMP" |
		grep -E -- "(^complete -c sbx (-[^n]|-n __sbx_opts_for )|-n '__sbx_(using|opts_for|operand [0-9a-z]+)( [a-z-]+)* $1( [a-z-]+)*')"
}

# Fails with a message when the word is not in the text (as a whole word:
# --env does not match --environment).
has_word() {
	local text=$1 word=$2 what=$3
	if ! grep -qE -- "(^|[^A-Za-z0-9-])${word}([^A-Za-z0-9-]|\$)" <<<"$text"; then
		echo "$what: no $word" >&2
		return 1
	fi
}

# The commands in the SYNOPSIS of Markdown page $1 (lines `**sbx CMD**...`).
synopsis_commands() {
	awk '/^## / { f = ($0 == "## SYNOPSIS") } f' "$1" | sed -nE 's/^\*\*sbx ([a-z-]+)\*\*.*/\1/p'
}

# The Markdown page that has `**sbx CMD**` in its synopsis.
man_page_of() {
	local md
	for md in "$MAN"/*.md; do
		if synopsis_commands "$md" | grep -qx -- "$1"; then
			echo "$md"
			return
		fi
	done
}

# The part of page $1 that documents command $2: its "### sbx CMD" section
# and the page's "## OPTIONS" section when the page has such headings, else
# the whole page.
man_text_of() {
	if grep -qE "^### sbx $2( |\$)" "$1"; then
		awk -v cmd="$2" '
			/^## / { f = ($0 == "## OPTIONS") }
			/^### / { f = ($0 ~ "^### sbx " cmd "( |$)") }
			f' "$1"
	else
		cat "$1"
	fi
}

# --- the help itself --------------------------------------------------------

@test "docs: sbx --help lists commands and each has --help with options" {
	run help_commands
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -ge 10 ]
	for cmd in "${lines[@]}"; do
		run "$SBX_BIN" "$cmd" --help
		[ "$status" -eq 0 ] || { echo "sbx $cmd --help: status $status" >&2; return 1; }
		[[ $output == *"Options:"* ]]
		# Every command takes --json and --help (DESIGN.md, section 1).
		grep -qE -- '^ +--json ' <<<"$output"
		grep -qE -- '^ +-h, --help ' <<<"$output"
	done
	run global_options
	[ "${#lines[@]}" -ge 4 ]
}

# --- bash ---------------------------------------------------------------

@test "docs: bash completion has valid syntax" {
	bash -n "$BASH_COMP"
}

@test "docs: bash completes exactly the commands of sbx --help" {
	diff -u <(help_commands | LC_ALL=C sort) <(bash_complete "$SBX_BIN" "")
}

@test "docs: bash completes exactly the global options of sbx --help" {
	diff -u <(global_options | option_words) <(bash_complete "$SBX_BIN" -)
}

@test "docs: bash completes exactly each command's options of sbx CMD --help" {
	local cmd fail=0
	for cmd in $(help_commands); do
		diff -u --label "sbx $cmd --help" --label "bash: sbx $cmd -<TAB>" \
			<(command_options "$cmd" | option_words) <(bash_complete "$SBX_BIN" "$cmd" -) || fail=1
	done
	[ "$fail" -eq 0 ]
}

@test "docs: bash completes options after an operand only where sbx accepts them" {
	# A command whose usage has a command line (CMD) stops taking options at
	# its first operand; the others take options anywhere.
	local cmd usage offered fail=0
	for cmd in $(help_commands); do
		usage=$("$SBX_BIN" "$cmd" --help | head -n 1)
		offered=$(bash_complete "$SBX_BIN" "$cmd" x -)
		if [[ $usage == *CMD* ]]; then
			[[ -z $offered || $offered == -- ]] || { echo "bash: sbx $cmd x -<TAB> offers options" >&2; fail=1; }
		else
			[ "$offered" = "$(command_options "$cmd" | option_words)" ] ||
				{ echo "bash: sbx $cmd x -<TAB> does not offer its options" >&2; fail=1; }
		fi
	done
	[ "$fail" -eq 0 ]
}

@test "docs: bash completes the command names after sbx help" {
	diff -u <(help_commands | LC_ALL=C sort) <(bash_complete "$SBX_BIN" help "")
	[ -z "$(bash_complete "$SBX_BIN" help ls "")" ]
}

@test "docs: bash completes the keys of sbx ls --sort" {
	[ "$(bash_complete "$SBX_BIN" ls --sort "")" = "$(printf '%s\n' created id image name runtime state)" ]
	"$SBX_BIN" ls --help | grep -qE -- '--sort KEY +order by created \(default: oldest first\), id, name, state, runtime or image'
}

@test "docs: make install puts the completions where bash-completion, zsh and fish look" {
	local build=${SBX_BIN%/*} dest=$BATS_TEST_TMPDIR/inst prefix
	[ -f "$build/Makefile" ] || skip "no Makefile next to $SBX_BIN"
	prefix=$(sed -n 's/^prefix = //p' "$build/Makefile")
	make -s -C "$build" install-data DESTDIR="$dest" >/dev/null
	# bash-completion loads completions/NAME for the command NAME, from
	# every DIR/bash-completion/completions of XDG_DATA_DIRS.
	cmp "$BASH_COMP" "$dest$prefix/share/bash-completion/completions/sbx"
	cmp "$ZSH_COMP" "$dest$prefix/share/zsh/site-functions/_sbx"
	cmp "$FISH_COMP" "$dest$prefix/share/fish/vendor_completions.d/sbx.fish"
	[ -f "$dest$prefix/share/man/man1/sbx.1" ]
}

# --- zsh ----------------------------------------------------------------

@test "docs: zsh completion is a #compdef file for sbx" {
	[ "$(head -n 1 "$ZSH_COMP")" = "#compdef sbx" ]
	grep -q '^_sbx "\$@"' "$ZSH_COMP"
}

@test "docs: zsh completion has valid syntax (zsh -n)" {
	command -v zsh >/dev/null || skip "zsh is not installed (contrib/setup-debian.sh installs it)"
	zsh -n "$ZSH_COMP"
}

@test "docs: zsh completion lists exactly the commands of sbx --help" {
	diff -u <(help_commands | LC_ALL=C sort) \
		<(awk '/local -a commands=\(/ { f = 1; next } f && /^[[:space:]]*\)/ { exit } f' "$ZSH_COMP" |
			sed -nE "s/^[[:space:]]*'([a-z-]+):.*/\1/p" | LC_ALL=C sort)
}

@test "docs: zsh completion has a case for every command, with each of its options" {
	local cmd text fail=0 long short
	for cmd in $(help_commands); do
		text=$(zsh_arm "$cmd")
		if [ -z "$text" ]; then
			echo "zsh: no case for $cmd" >&2
			fail=1
			continue
		fi
		while read -r long short; do
			has_word "$text" "--$long" "zsh, sbx $cmd" || fail=1
			[[ -z $short ]] || has_word "$text" "-$short" "zsh, sbx $cmd" || fail=1
		done < <(command_options "$cmd")
	done
	[ "$fail" -eq 0 ]
}

@test "docs: zsh completion has the global options" {
	local text fail=0 long short
	text=$(awk '/_arguments -C/ { f = 1 } f { print } f && !/\\$/ { exit }' "$ZSH_COMP")
	while read -r long short; do
		has_word "$text" "--$long" "zsh, global" || fail=1
		[[ -z $short ]] || has_word "$text" "-$short" "zsh, global" || fail=1
	done < <(global_options)
	[ "$fail" -eq 0 ]
}

# --- fish ---------------------------------------------------------------

@test "docs: fish completion is for sbx" {
	grep -q '^complete -c sbx ' "$FISH_COMP"
}

@test "docs: fish completion has valid syntax (fish --no-execute)" {
	command -v fish >/dev/null || skip "fish is not installed (contrib/setup-debian.sh installs it)"
	fish --no-config --no-execute "$FISH_COMP"
}

@test "docs: fish completion lists exactly the commands of sbx --help" {
	diff -u <(help_commands | LC_ALL=C sort) \
		<(sed -nE 's/^complete -c sbx -n __sbx_no_command -a ([a-z-]+) .*/\1/p' "$FISH_COMP" | LC_ALL=C sort)
}

@test "docs: fish completion has each command's options, for that command" {
	local cmd text fail=0 long short line
	for cmd in $(help_commands); do
		text=$(fish_lines "$cmd" || true)
		while read -r long short; do
			line=$(grep -E -- "-l $long( |\$)" <<<"$text" || true)
			if [ -z "$line" ]; then
				echo "fish, sbx $cmd: no --$long" >&2
				fail=1
			elif [ -n "$short" ] && ! grep -qE -- "-s $short -l $long( |\$)" <<<"$line"; then
				echo "fish, sbx $cmd: no -$short for --$long" >&2
				fail=1
			fi
		done < <(command_options "$cmd")
	done
	[ "$fail" -eq 0 ]
}

@test "docs: fish completion has the global options" {
	local text fail=0 long short
	text=$(grep -E '^complete -c sbx (-n (__sbx_no_command|__sbx_opts_for) )?-[sl] ' "$FISH_COMP")
	while read -r long short; do
		if [ -n "$short" ]; then
			grep -qE -- "-s $short -l $long( |\$)" <<<"$text" || { echo "fish: no -$short --$long" >&2; fail=1; }
		else
			grep -qE -- "-l $long( |\$)" <<<"$text" || { echo "fish: no --$long" >&2; fail=1; }
		fi
	done < <(global_options)
	[ "$fail" -eq 0 ]
}

# --- dynamic completion, against a stand-in for sbx --------------------------

# A stand-in that answers `ls -q`, `ls` and `images` as sbx does, and logs
# its arguments, so that completion is checked without a store.
make_stub() {
	STUB=$BATS_TEST_TMPDIR/sbx
	cat >"$STUB" <<'EOF'
#!/bin/sh
echo "$*" >>"${0%/*}/calls"
while [ $# -gt 0 ]; do
	case $1 in
	--root | --run-root) shift 2 ;;
	--root=* | --run-root=*) shift ;;
	*) break ;;
	esac
done
case "$*" in
"ls -q") printf 'sb-0123456789ab\nsb-ba9876543210\n' ;;
ls) printf 'ID NAME STATE\nsb-0123456789ab web running\nsb-ba9876543210 - terminated\n' ;;
images) printf 'ID TAGS SIZE\n0123456789abcdef012 debian,py3 1\n456789abcdef0123456 - 2\n' ;;
esac
EOF
	chmod +x "$STUB"
}

@test "docs: the dynamic completions use options sbx has" {
	command_options ls | grep -qx 'quiet q'
	"$SBX_BIN" ls --help | grep -q 'print ids only'
	for f in "$BASH_COMP" "$ZSH_COMP" "$FISH_COMP"; do
		grep -q 'ls -q' "$f"
		grep -q 'images' "$f"
	done
}

@test "docs: bash completes sandbox ids and names, and image tags" {
	make_stub
	local ids=$'sb-0123456789ab\nsb-ba9876543210\nweb'
	for cmd in exec status wait logs ttl terminate rm; do
		[ "$(bash_complete "$STUB" "$cmd" "")" = "$ids" ] || { echo "bash: sbx $cmd <TAB>" >&2; return 1; }
	done
	[ "$(bash_complete "$STUB" rm web "")" = "$ids" ]
	[ -z "$(bash_complete "$STUB" exec web "")" ]
	[ -z "$(bash_complete "$STUB" exec web -- "")" ]
	[ -z "$(bash_complete "$STUB" ttl web "")" ]
	[ "$(bash_complete "$STUB" exec -e A=1 --cwd /x "")" = "$ids" ]
	[ "$(bash_complete "$STUB" create --image "")" = $'busybox\ndebian\npy3' ]
	[ "$(bash_complete "$STUB" run --image = d)" = debian ]
	[ "$(bash_complete "$STUB" create --runtime "")" = $'runc\nrunsc' ]
	# The global options typed reach the sbx that lists them.
	: >"$BATS_TEST_TMPDIR/calls"
	bash_complete "$STUB" --root /r --run-root = /rr status "" >/dev/null
	grep -qx -- '--root /r --run-root /rr ls -q' "$BATS_TEST_TMPDIR/calls"
}

@test "docs: fish completes sandbox ids and names, and image tags" {
	command -v fish >/dev/null || skip "fish is not installed (contrib/setup-debian.sh installs it)"
	make_stub
	fish_complete() {
		PATH=$BATS_TEST_TMPDIR:$PATH fish --no-config -c 'source $argv[1]; complete -C $argv[2]' \
			"$FISH_COMP" "$1" | cut -f1 | LC_ALL=C sort
	}
	local ids=$'sb-0123456789ab\nsb-ba9876543210\nweb'
	[ "$(fish_complete 'sbx status ')" = "$ids" ]
	[ "$(fish_complete 'sbx rm web ')" = "$ids" ]
	[ -z "$(fish_complete 'sbx exec web ')" ]
	[ "$(fish_complete 'sbx exec -e A=1 --cwd /x ')" = "$ids" ]
	[ "$(fish_complete 'sbx create --image ')" = $'busybox\ndebian\npy3' ]
	: >"$BATS_TEST_TMPDIR/calls"
	fish_complete 'sbx --root /r logs ' >/dev/null
	grep -qx -- '--root /r ls -q' "$BATS_TEST_TMPDIR/calls"
}

# --- man pages ----------------------------------------------------------

@test "docs: every command is in a man page's synopsis, and every synopsis is a command" {
	local cmd fail=0
	for cmd in $(help_commands); do
		[ -n "$(man_page_of "$cmd")" ] || { echo "no man page has **sbx $cmd** in its synopsis" >&2; fail=1; }
	done
	diff -u <(help_commands | LC_ALL=C sort) \
		<(for md in "$MAN"/*.md; do synopsis_commands "$md"; done | LC_ALL=C sort -u) || fail=1
	[ "$fail" -eq 0 ]
}

@test "docs: every option of every command is documented in its man page" {
	local cmd page text roff fail=0 long short
	for cmd in $(help_commands); do
		page=$(man_page_of "$cmd")
		[ -n "$page" ] || { fail=1; continue; }
		text=$(man_text_of "$page" "$cmd")
		roff=$(cat "${page%.md}")
		while read -r long short; do
			if [ -n "$short" ]; then
				grep -qF -- "**-$short**, **--$long**" <<<"$text" ||
					{ echo "${page##*/}, sbx $cmd: no **-$short**, **--$long**" >&2; fail=1; }
			else
				grep -qF -- "**--$long**" <<<"$text" || { echo "${page##*/}, sbx $cmd: no **--$long**" >&2; fail=1; }
			fi
			grep -qF -- "\\fB--$long\\fP" <<<"$roff" || { echo "${page%.md}: no --$long (regenerate)" >&2; fail=1; }
		done < <(command_options "$cmd")
	done
	[ "$fail" -eq 0 ]
}

@test "docs: sbx(1) documents the global options, error codes and environment" {
	local page=$MAN/sbx.1.md fail=0 long short code var
	while read -r long short; do
		grep -qF -- "**--$long**" "$page" || { echo "sbx.1.md: no --$long" >&2; fail=1; }
		[[ -z $short ]] || grep -qF -- "**-$short**, **--$long**" "$page" || { echo "sbx.1.md: no -$short" >&2; fail=1; }
	done < <(global_options)
	# Every error code sbx has, and every SBX_ variable it reads.
	local codes vars
	codes=$(sed -nE 's/.*\[SBX_E_[A-Z_]+\] = "([A-Z_]+)".*/\1/p' "$SBX_SRCDIR"/src/lib/error.c)
	vars=$(grep -rhoE 'getenv \("SBX_[A-Z_]+"' "$SBX_SRCDIR"/src | grep -oE 'SBX_[A-Z_]+' | sort -u)
	[ "$(wc -w <<<"$codes")" -ge 11 ] || { echo "cannot read the error codes from src/lib/error.c" >&2; return 1; }
	[ "$(wc -w <<<"$vars")" -ge 2 ] || { echo "cannot find the getenv calls in src/" >&2; return 1; }
	for code in $codes; do
		grep -qE "^\*\*$code\*\*\$" "$page" || { echo "sbx.1.md: no error code $code" >&2; fail=1; }
	done
	for var in $vars; do
		grep -qE "^\*\*$var\*\*\$" "$page" || { echo "sbx.1.md: no $var in ENVIRONMENT" >&2; fail=1; }
	done
	for section in NAME SYNOPSIS DESCRIPTION 'GLOBAL OPTIONS' 'EXIT STATUS' 'ERROR CODES' FILES ENVIRONMENT 'SEE ALSO'; do
		grep -qx "## $section" "$page" || { echo "sbx.1.md: no section $section" >&2; fail=1; }
	done
	[ "$fail" -eq 0 ]
}

@test "docs: every man page has its generated roff" {
	local md fail=0 ref
	for md in "$MAN"/*.md; do
		[ -s "${md%.md}" ] || { echo "no ${md%.md}: run man/generate.sh" >&2; fail=1; continue; }
		head -n 5 "${md%.md}" | grep -q '^\.TH ' || { echo "${md%.md}: no .TH" >&2; fail=1; }
	done
	# Every page named in a SEE ALSO of ours exists.
	for ref in $(grep -ohE '\*\*sbx(-[a-z]+)?\*\*\(1\)' "$MAN"/*.md | sed -E 's/\*\*(.*)\*\*\(1\)/\1/' | sort -u); do
		[ -f "$MAN/$ref.1.md" ] || { echo "man: $ref(1) is referenced but missing" >&2; fail=1; }
	done
	[ "$fail" -eq 0 ]
}

@test "docs: the committed roff is what man/generate.sh makes of the Markdown (go-md2man)" {
	command -v go-md2man >/dev/null || skip "go-md2man is not installed (contrib/setup-debian.sh installs it)"
	local fresh=$BATS_TEST_TMPDIR/man md n=0
	mkdir "$fresh"
	cp "$MAN"/generate.sh "$MAN"/*.md "$fresh"/
	"$fresh"/generate.sh >/dev/null
	for md in "$MAN"/*.md; do
		n=$((n + 1))
		diff -u --label "${md%.md} (committed)" --label "${md%.md} (go-md2man)" "${md%.md}" "$fresh/$(basename "${md%.md}")" ||
			{ echo "${md%.md} is stale: run man/generate.sh" >&2; return 1; }
	done
	[ "$n" -ge 10 ]
}

# --- generated completions ------------------------------------------------

@test "docs: the committed completions are what make completions generates" {
	# completions/*.in plus the command and option tables (src/cli-complete.c);
	# regenerate with `make completions` after changing either.
	local f sh fail=0
	for f in sbx.bash:bash _sbx:zsh sbx.fish:fish; do
		sh=${f#*:}
		f=$SBX_SRCDIR/completions/${f%:*}
		diff -u --label "$f (committed)" --label "sbx __complete-gen $sh" \
			"$f" <("$SBX_BIN" __complete-gen "$sh" <"$f.in") || fail=1
	done
	[ "$fail" -eq 0 ]
	# A shell it does not know is an error, not an empty script.
	run "$SBX_BIN" __complete-gen csh </dev/null
	[ "$status" -eq 125 ]
	[[ $output == *INVALID_ARGUMENT*csh* ]]
}
