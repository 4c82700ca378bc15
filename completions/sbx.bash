# bash completion for sbx(1)                                -*- shell-script -*-
#
# Install as /usr/share/bash-completion/completions/sbx, or source it.
# Self-contained: it does not need the bash-completion package.
# The option lists mirror `sbx COMMAND --help`; tests/integration/docs.bats
# checks them against it.

_sbx_commands='create run exec run-code ps proc fs cp ls status wait terminate rm logs pause resume commit snapshot restore snapshots rmsnap net expose urls ttl stats images import export build tag rmi info gc version help'
_sbx_global_opts='--root --run-root --json --version -h --help'
_sbx_fs_verbs='read write upload download ls stat mkdir rm rmdir find replace watch'

# The options of command $1, then those of them that take a value.
_sbx_opts() {
	local create='--image --name --cpu --memory --pids --disk --runtime --block-network --allow --port --public --keep-warm --timeout --on-idle -e --env --cwd'
	case $1 in
	create) echo "$create" ;;
	run) echo "$create --rm" ;;
	exec) echo '-i --interactive -t --tty -d --detach -e --env --cwd --user --timeout' ;;
	run-code) echo '-l --lang -e --env --cwd --timeout' ;;
	proc) echo '--timeout -s --signal -f --follow' ;;
	fs) echo '--limit --cursor -p --parents -r --recursive --name' ;;
	ls) echo '-q --quiet --sort' ;;
	images | snapshots | ps) echo '-q --quiet' ;;
	wait) echo '--timeout' ;;
	terminate) echo '--rm' ;;
	rm) echo '-f --force' ;;
	import | commit) echo '-t --tag' ;;
	export) echo '--compression' ;;
	build) echo '-f --file -t --tag --no-cache --runtime' ;;
	rmi) echo '-f --force' ;;
	restore) echo '-n --count' ;;
	net) echo '--block --allow --open' ;;
	esac
}

_sbx_opts_with_arg() {
	case $1 in
	create | run) echo '--image --name --cpu --memory --pids --disk --runtime --allow --port --keep-warm --timeout --on-idle -e --env --cwd' ;;
	exec) echo '-e --env --cwd --user --timeout' ;;
	run-code) echo '-l --lang -e --env --cwd --timeout' ;;
	proc) echo '--timeout -s --signal' ;;
	fs) echo '--limit --cursor --name' ;;
	wait) echo '--timeout' ;;
	ls) echo '--sort' ;;
	import | commit) echo '-t --tag' ;;
	export) echo '--compression' ;;
	build) echo '-f --file -t --tag --runtime' ;;
	restore) echo '-n --count' ;;
	net) echo '--allow' ;;
	esac
}

# Whether command $1 takes a command line (sbx COMMAND --help: "CMD"): its
# options stop at the first operand. The others take options anywhere.
_sbx_has_cmdline() {
	[[ $1 == run || $1 == exec ]]
}

# How many operands command $1 takes that are sandboxes: 1, "many" or 0.
_sbx_id_operands() {
	case $1 in
	exec | run-code | ps | proc | fs | status | wait | logs | ttl | commit | snapshot | stats | net | expose | urls) echo 1 ;;
	terminate | rm | pause | resume) echo many ;;
	*) echo 0 ;;
	esac
}

# Runs sbx with the global options typed so far (so --root is honoured);
# _sbx_argv is a local of _sbx.
_sbx_run() {
	"${_sbx_argv[@]}" "$@" 2>/dev/null
}

# Sandbox ids and names.
_sbx_ids() {
	_sbx_run ls -q
	_sbx_run ls | awk 'NR > 1 && $2 != "-" { print $2 }'
}

# The pids of sandbox $1's processes (the PID column of `sbx ps`).
_sbx_pids() {
	_sbx_run ps "$1" | awk 'NR > 1 { print $1 }'
}

# Snapshot ids (the first column of `sbx snapshots`).
_sbx_snapshots() {
	_sbx_run snapshots | awk 'NR > 1 { print $1 }'
}

# Image tags (the TAGS column of `sbx images`), and the built-in busybox.
_sbx_images() {
	echo busybox
	_sbx_run images | awk 'NR > 1 && $2 != "-" { n = split($2, t, ","); for (i = 1; i <= n; i++) print t[i] }'
}

_sbx_in_list() {
	local w
	for w in $2; do
		[[ $w == "$1" ]] && return 0
	done
	return 1
}

_sbx() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=''
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	# --opt=VALUE arrives as "--opt" "=" "VALUE" (= is a word break).
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi

	# Global options and the command.
	local -a _sbx_argv=("${COMP_WORDS[0]}")
	local i=1 w cmd='' cmd_at=0
	while ((i < COMP_CWORD)); do
		w=${COMP_WORDS[i]}
		case $w in
		--root | --run-root)
			if [[ ${COMP_WORDS[i + 1]} == = ]]; then
				_sbx_argv+=("$w" "${COMP_WORDS[i + 2]}")
				((i += 3))
			else
				_sbx_argv+=("$w" "${COMP_WORDS[i + 1]}")
				((i += 2))
			fi
			continue
			;;
		--root=* | --run-root=*) _sbx_argv+=("$w") ;;
		-*) ;;
		*)
			cmd=$w
			cmd_at=$i
			break
			;;
		esac
		((i++))
	done

	if [[ -z $cmd ]]; then
		case $prev in
		--root | --run-root)
			compopt -o filenames 2>/dev/null
			mapfile -t COMPREPLY < <(compgen -d -- "$cur")
			return
			;;
		esac
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$_sbx_global_opts" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$_sbx_commands" -- "$cur")
		fi
		return
	fi

	# The value of an option of the command.
	if _sbx_in_list "$prev" "$(_sbx_opts_with_arg "$cmd")"; then
		case $prev in
		--image) mapfile -t COMPREPLY < <(compgen -W "$(_sbx_images)" -- "$cur") ;;
		-f | --file)
			# build: the blueprint, a host file (- for stdin)
			compopt -o filenames 2>/dev/null
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			;;
		--runtime) mapfile -t COMPREPLY < <(compgen -W 'runsc runc' -- "$cur") ;;
		--keep-warm) mapfile -t COMPREPLY < <(compgen -W '-1 60 600 3600' -- "$cur") ;;
		--on-idle) mapfile -t COMPREPLY < <(compgen -W 'pause terminate' -- "$cur") ;;
		--compression) mapfile -t COMPREPLY < <(compgen -W 'gzip none' -- "$cur") ;;
		--sort) mapfile -t COMPREPLY < <(compgen -W 'created id name state runtime image' -- "$cur") ;;
		-s | --signal) mapfile -t COMPREPLY < <(compgen -W 'HUP INT QUIT KILL USR1 USR2 ALRM TERM CONT STOP' -- "$cur") ;;
		--limit) mapfile -t COMPREPLY < <(compgen -W '200 1000 10000' -- "$cur") ;;
		-n | --count) mapfile -t COMPREPLY < <(compgen -W '1 2 4 8' -- "$cur") ;;
		esac
		return
	fi

	# Operands so far (after the options; "--" ends them).
	local nargs=0 dashdash='' first_arg='' second_arg=''
	for ((i = cmd_at + 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ -n $dashdash ]] || { ((nargs > 0)) && _sbx_has_cmdline "$cmd"; }; then
			((nargs++))
		elif [[ $w == -- ]]; then
			dashdash=1
		elif [[ $w == = ]]; then
			((i++))
		elif [[ $w == -* ]]; then
			_sbx_in_list "$w" "$(_sbx_opts_with_arg "$cmd")" && [[ ${COMP_WORDS[i + 1]} != = ]] && ((i++))
		else
			case $nargs in
			0) first_arg=$w ;;
			1) second_arg=$w ;;
			esac
			((nargs++))
		fi
	done

	if [[ -z $dashdash && $cur == -* ]]; then
		if ((nargs == 0)) || ! _sbx_has_cmdline "$cmd"; then
			mapfile -t COMPREPLY < <(compgen -W "$(_sbx_opts "$cmd") --json -h --help" -- "$cur")
		elif [[ $cmd == exec ]] && ((nargs == 1)); then
			mapfile -t COMPREPLY < <(compgen -W '--' -- "$cur")
		fi
		return
	fi

	# Operands. The command run inside a sandbox is not completed.
	[[ -n $dashdash ]] && return
	case $(_sbx_id_operands "$cmd") in
	1) ((nargs == 0)) && mapfile -t COMPREPLY < <(compgen -W "$(_sbx_ids)" -- "$cur") ;;
	many) mapfile -t COMPREPLY < <(compgen -W "$(_sbx_ids)" -- "$cur") ;;
	esac
	if [[ $cmd == proc ]]; then
		case $nargs in
		1) mapfile -t COMPREPLY < <(compgen -W "$(_sbx_pids "$first_arg")" -- "$cur") ;;
		2) mapfile -t COMPREPLY < <(compgen -W 'status wait kill logs' -- "$cur") ;;
		esac
	fi
	# fs: the verb, then the host file of upload and download (the paths in
	# the sandbox are not completed). cp: host files, or ID: for a sandbox.
	if [[ $cmd == fs ]]; then
		case $nargs:$second_arg in
		1:*) mapfile -t COMPREPLY < <(compgen -W "$_sbx_fs_verbs" -- "$cur") ;;
		2:upload | 3:download)
			compopt -o filenames 2>/dev/null
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			;;
		esac
	fi
	if [[ $cmd == cp ]]; then
		# ID:PATH arrives as "ID" ":" "PATH" (: is a word break).
		[[ $cur == : || $prev == : || $cur == *:* ]] && return
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		if [[ $cur != */* ]]; then
			local -a refs
			mapfile -t refs < <(compgen -W "$(_sbx_ids)" -S : -- "$cur")
			COMPREPLY+=("${refs[@]}")
			((${#COMPREPLY[@]} == 1 && ${#refs[@]} == 1)) && compopt -o nospace 2>/dev/null
		fi
	fi
	# import: a host file or directory; export: an image, then a host file.
	if { [[ $cmd == import ]] && ((nargs == 0)); } || { [[ $cmd == export ]] && ((nargs == 1)); }; then
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
	if [[ $cmd == export ]] && ((nargs == 0)); then
		mapfile -t COMPREPLY < <(compgen -W "$(_sbx_images)" -- "$cur")
	fi
	# help: a command.
	if [[ $cmd == help ]] && ((nargs == 0)); then
		mapfile -t COMPREPLY < <(compgen -W "$_sbx_commands" -- "$cur")
	fi
	# build: the context, a host directory.
	if [[ $cmd == build ]] && ((nargs == 0)); then
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
	fi
	# restore: a snapshot; rmsnap: snapshots.
	if [[ $cmd == rmsnap ]] || { [[ $cmd == restore ]] && ((nargs == 0)); }; then
		mapfile -t COMPREPLY < <(compgen -W "$(_sbx_snapshots)" -- "$cur")
	fi
	# tag: the image, then its new name (an existing tag moves); rmi: images.
	if [[ $cmd == rmi ]] || { [[ $cmd == tag ]] && ((nargs < 2)); }; then
		mapfile -t COMPREPLY < <(compgen -W "$(_sbx_images)" -- "$cur")
	fi
} &&
	complete -F _sbx sbx
