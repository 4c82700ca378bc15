# fish completion for sbx(1). Install as
# /usr/share/fish/vendor_completions.d/sbx.fish. The option lists mirror
# `sbx COMMAND --help`; tests/integration/docs.bats checks them against it.

# The options of command $argv[1] that take a value.
function __sbx_opts_with_arg
    switch $argv[1]
        case create run
            printf '%s\n' --image --name --cpu --memory --pids --disk --runtime --allow --port --keep-warm --timeout --on-idle -e --env --cwd
        case exec
            printf '%s\n' -e --env --cwd --user --timeout
        case proc
            printf '%s\n' --timeout -s --signal
        case fs
            printf '%s\n' --limit --cursor --name
        case wait
            printf '%s\n' --timeout
        case import commit
            printf '%s\n' -t --tag
        case export
            printf '%s\n' --compression
        case build
            printf '%s\n' -f --file -t --tag --runtime
        case restore
            printf '%s\n' -n --count
        case net
            printf '%s\n' --allow
    end
end

# Prints the global options typed so far, the command, and then its operands
# before the cursor, one a line: "g ARG", "c CMD", "o OPERAND".
function __sbx_parse
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l cmd
    set -l with_arg
    set -l skip 0
    set -l dashdash 0
    set -l nops 0
    for t in $tokens
        if test $skip -eq 1
            set skip 0
            test -z "$cmd"; and echo "g $t"
            continue
        end
        if test -z "$cmd"
            switch $t
                case --root --run-root
                    echo "g $t"
                    set skip 1
                case '--root=*' '--run-root=*'
                    echo "g $t"
                case '-*'
                case '*'
                    set cmd $t
                    set with_arg (__sbx_opts_with_arg $cmd)
                    echo "c $t"
            end
        else if test $dashdash -eq 1; or begin
                test $nops -gt 0; and contains -- $cmd run exec
            end
            # run and exec: options stop at the first operand
            set nops (math $nops + 1)
            echo "o $t"
        else if test "$t" = --
            set dashdash 1
        else if contains -- $t $with_arg
            set skip 1
        else if string match -q -- '-*' $t
        else
            set nops (math $nops + 1)
            echo "o $t"
        end
    end
end

# True when the command is one of $argv.
function __sbx_using
    set -l c (__sbx_parse | string replace -rf '^c ' '')
    test -n "$c"; and contains -- $c $argv
end

# True when the command is one of $argv (with no arguments: any command, or
# none yet) and may take an option here: run and exec take none after their
# first operand.
function __sbx_opts_for
    set -l p (__sbx_parse)
    set -l c (string replace -rf '^c ' '' -- $p)
    if set -q argv[1]
        test -n "$c"; and contains -- $c $argv; or return 1
    end
    contains -- "$c" run exec; or return 0
    not string match -q -r '^o ' -- $p
end

function __sbx_no_command
    not __sbx_parse | string match -q -r '^c '
end

# True when the word being completed is operand number $argv[1] (from 0;
# "any" for any) of a command in $argv[2..].
function __sbx_operand
    __sbx_using $argv[2..-1]; or return 1
    set -l n (__sbx_parse | string match -r '^o ' | count)
    test "$argv[1]" = any; or test $n -eq $argv[1]
end

# Runs sbx with the global options typed so far (so --root is honoured).
function __sbx_run
    set -l g (__sbx_parse | string replace -rf '^g ' '')
    set -l sbx (commandline -opc)[1]
    $sbx $g $argv 2>/dev/null
end

# Sandbox ids (`sbx ls -q`) and names (the NAME column of `sbx ls`).
function __sbx_sandboxes
    __sbx_run ls -q
    __sbx_run ls | awk 'NR > 1 && $2 != "-" { print $2 }'
end

# The pids of the processes of the sandbox that is the first operand (the PID
# column of `sbx ps`).
function __sbx_pids
    set -l id (__sbx_parse | string replace -rf '^o ' '')[1]
    test -n "$id"; or return
    __sbx_run ps $id | awk 'NR > 1 { print $1 }'
end

# True when the word being completed is the host file of `sbx fs ID upload`
# (operand 2) or `sbx fs ID download PATH` (operand 3).
function __sbx_fs_host_file
    __sbx_using fs; or return 1
    set -l ops (__sbx_parse | string replace -rf '^o ' '')
    switch "$ops[2]:"(count $ops)
        case upload:2 download:3
            return 0
    end
    return 1
end

# True when the word being completed is an operand of `sbx cp` that is not
# (yet) ID:PATH: a host file, or the id or name of a sandbox. The path after
# ID: is not completed.
function __sbx_cp_host
    __sbx_operand any cp; or return 1
    not string match -q -- '*:*' (commandline -ct)
end

# Sandbox ids and names followed by a colon, for the ID:PATH of `sbx cp`.
function __sbx_cp_refs
    __sbx_sandboxes | string replace -r '$' ':'
end

# Snapshot ids (the first column of `sbx snapshots`).
function __sbx_snapshots
    __sbx_run snapshots | awk 'NR > 1 { print $1 }'
end

# Image tags (the TAGS column of `sbx images`) and the built-in busybox.
function __sbx_images
    echo busybox
    __sbx_run images | awk 'NR > 1 && $2 != "-" { n = split($2, t, ","); for (i = 1; i <= n; i++) print t[i] }'
end

complete -c sbx -f

# Commands
complete -c sbx -n __sbx_no_command -a create -d 'Create a sandbox and print its id'
complete -c sbx -n __sbx_no_command -a run -d 'Create a sandbox, run CMD in it, terminate it'
complete -c sbx -n __sbx_no_command -a exec -d 'Run CMD in a running sandbox'
complete -c sbx -n __sbx_no_command -a run-code -d "Run a code snippet with the image's interpreter"
complete -c sbx -n __sbx_no_command -a ps -d 'List the processes started in a sandbox'
complete -c sbx -n __sbx_no_command -a proc -d 'Inspect, wait for, signal or read the output of a process of a sandbox'
complete -c sbx -n __sbx_no_command -a fs -d 'Read, write, list, search and watch the files of a sandbox'
complete -c sbx -n __sbx_no_command -a cp -d 'Copy a file out of or into a sandbox'
complete -c sbx -n __sbx_no_command -a ls -d 'List sandboxes'
complete -c sbx -n __sbx_no_command -a status -d "Show a sandbox's state, reason, limits and lifetimes"
complete -c sbx -n __sbx_no_command -a wait -d 'Block until a sandbox reaches a final state'
complete -c sbx -n __sbx_no_command -a terminate -d 'End sandboxes'
complete -c sbx -n __sbx_no_command -a rm -d 'Remove ended sandboxes and their files'
complete -c sbx -n __sbx_no_command -a logs -d "Print a sandbox's log"
complete -c sbx -n __sbx_no_command -a pause -d "Freeze running sandboxes (the runtime's pause)"
complete -c sbx -n __sbx_no_command -a resume -d 'Thaw paused sandboxes'
complete -c sbx -n __sbx_no_command -a commit -d "Save a sandbox's files as a new image"
complete -c sbx -n __sbx_no_command -a snapshot -d "Save a running sandbox's processes, memory and files (runsc); the sandbox ends"
complete -c sbx -n __sbx_no_command -a restore -d 'Start new running sandboxes from a snapshot, each as it was'
complete -c sbx -n __sbx_no_command -a snapshots -d 'List snapshots'
complete -c sbx -n __sbx_no_command -a rmsnap -d 'Remove snapshots'
complete -c sbx -n __sbx_no_command -a net -d "Change a running sandbox's egress: --block, --allow CIDR..., --open"
complete -c sbx -n __sbx_no_command -a expose -d "Publish a sandbox's port as a URL on the host (behind a token unless --public)"
complete -c sbx -n __sbx_no_command -a urls -d "List a sandbox's exposed ports and their URLs"
complete -c sbx -n __sbx_no_command -a ttl -d "Set a running sandbox's hard lifetime"
complete -c sbx -n __sbx_no_command -a stats -d 'Count sandboxes by state; with ID, what that sandbox uses now'
complete -c sbx -n __sbx_no_command -a images -d 'List images'
complete -c sbx -n __sbx_no_command -a import -d 'Import an image: rootfs tarball, OCI layout or archive, docker save archive'
complete -c sbx -n __sbx_no_command -a export -d 'Write an image as an OCI archive that podman and docker load'
complete -c sbx -n __sbx_no_command -a build -d 'Build a blueprint (JSON, see sbx-blueprint(5)) into an image'
complete -c sbx -n __sbx_no_command -a tag -d 'Give an image another name (a tag)'
complete -c sbx -n __sbx_no_command -a rmi -d 'Remove images (or one of several tags)'
complete -c sbx -n __sbx_no_command -a info -d 'Report what this host supports'
complete -c sbx -n __sbx_no_command -a gc -d 'Reap lost sandboxes, remove ended ones and orphaned host resources'
complete -c sbx -n __sbx_no_command -a version -d 'Print the version'
complete -c sbx -n __sbx_no_command -a help -d "Show the help, or a command's (as sbx COMMAND --help)"

# Global options (before the command)
complete -c sbx -n __sbx_no_command -l root -x -a '(__fish_complete_directories)' -d 'State directory'
complete -c sbx -n __sbx_no_command -l run-root -x -a '(__fish_complete_directories)' -d 'Runtime directory'
complete -c sbx -n __sbx_no_command -l version -d 'Print the version'

# Every command's, and global
complete -c sbx -n __sbx_opts_for -l json -d 'Print one JSON document on stdout'
complete -c sbx -n __sbx_opts_for -s h -l help -d 'Show this help'

# create, run
complete -c sbx -n '__sbx_opts_for create run' -l image -x -a '(__sbx_images)' -d 'Image tag or id'
complete -c sbx -n '__sbx_opts_for create run' -l name -x -d 'A unique name usable in place of the id'
complete -c sbx -n '__sbx_opts_for create run' -l cpu -x -d 'CPU limit in cores, fractional; 0: none (default 1)'
complete -c sbx -n '__sbx_opts_for create run' -l memory -x -d 'Memory limit: MiB, or with a unit (512Mi, 1Gi); 0: none (default 1Gi)'
complete -c sbx -n '__sbx_opts_for create run' -l pids -x -d 'Process limit'
complete -c sbx -n '__sbx_opts_for create run' -l disk -x -d 'Writable layer limit (default 10Gi, 0: none)'
complete -c sbx -n '__sbx_opts_for create run' -l runtime -x -a 'runsc runc' -d 'Runtime'
complete -c sbx -n '__sbx_opts_for create run' -l block-network -d 'No network interface: loopback only, no DNS'
complete -c sbx -n '__sbx_opts_for create run' -l allow -x -d 'Reach only this destination (CIDR), plus DNS; repeatable'
complete -c sbx -n '__sbx_opts_for create run' -l port -x -d 'Expose this port as a URL on the host; repeatable'
complete -c sbx -n '__sbx_opts_for create run' -l public -d 'Exposed ports need no token'
complete -c sbx -n '__sbx_opts_for create run' -l keep-warm -x -d 'Idle lifetime in seconds (-1: until terminated)'
complete -c sbx -n '__sbx_opts_for create run' -l timeout -x -d 'Hard lifetime in seconds'
complete -c sbx -n '__sbx_opts_for create run' -l on-idle -x -a 'terminate pause' -d 'When the keep-warm time runs out'
complete -c sbx -n '__sbx_opts_for create run' -s e -l env -x -d 'Environment for every command (KEY=VALUE)'
complete -c sbx -n '__sbx_opts_for create run' -l cwd -x -d 'Working directory for every command'
complete -c sbx -n '__sbx_opts_for run' -l rm -d 'Remove the sandbox and its files afterwards'

# exec
complete -c sbx -n '__sbx_opts_for exec' -s i -l interactive -d 'Pass stdin to the command'
complete -c sbx -n '__sbx_opts_for exec' -s t -l tty -d 'Run the command on a terminal inside the sandbox'
complete -c sbx -n '__sbx_opts_for exec' -s d -l detach -d 'Start the command in the background and print its pid'
complete -c sbx -n '__sbx_opts_for exec' -s e -l env -x -d 'Set an environment variable (KEY=VALUE)'
complete -c sbx -n '__sbx_opts_for exec' -l cwd -x -d 'Working directory (absolute)'
complete -c sbx -n '__sbx_opts_for exec' -l user -x -d 'Run as this numeric user (UID[:GID])'
complete -c sbx -n '__sbx_opts_for exec' -l timeout -x -d 'Kill the command after SECONDS; exit status 124'

# run-code, proc, fs, ls, wait, terminate, rm, commit, import, export, rmi, restore
complete -c sbx -n '__sbx_opts_for run-code' -s l -l lang -x -a 'python sh bash node' -d 'The interpreter'
complete -c sbx -n '__sbx_opts_for run-code' -s e -l env -x -d 'Set an environment variable (KEY=VALUE)'
complete -c sbx -n '__sbx_opts_for run-code' -l cwd -x -d 'Working directory (absolute)'
complete -c sbx -n '__sbx_opts_for run-code' -l timeout -x -d 'Kill the snippet after SECONDS; exit status 124'
complete -c sbx -n '__sbx_opts_for proc' -l timeout -x -d 'wait: give up after SECONDS (error TIMEOUT)'
complete -c sbx -n '__sbx_opts_for proc' -s s -l signal -x -a 'HUP INT QUIT KILL USR1 USR2 ALRM TERM CONT STOP' -d 'kill: the signal (default KILL)'
complete -c sbx -n '__sbx_opts_for proc' -s f -l follow -d 'logs: keep printing new output until the process exits'
complete -c sbx -n '__sbx_opts_for fs' -l limit -x -a '200 1000 10000' -d 'ls: entries per page (1..10000, default 200)'
complete -c sbx -n '__sbx_opts_for fs' -l cursor -x -d 'ls: the page after CURSOR (printed with the previous page)'
complete -c sbx -n '__sbx_opts_for fs' -s p -l parents -d 'mkdir: make missing parents, no error if it exists'
complete -c sbx -n '__sbx_opts_for fs' -s r -l recursive -d 'rmdir: remove the whole tree; watch: subdirectories too'
complete -c sbx -n '__sbx_opts_for fs' -l name -x -d 'find, replace: only files whose name matches GLOB'
complete -c sbx -n '__sbx_opts_for ls' -s q -l quiet -d 'Print ids only'
complete -c sbx -n '__sbx_opts_for ls' -l sort -x -a 'created id name state runtime image' -d 'Order by KEY (default created: oldest first)'
complete -c sbx -n '__sbx_opts_for images' -s q -l quiet -d 'Print image ids only'
complete -c sbx -n '__sbx_opts_for snapshots' -s q -l quiet -d 'Print snapshot ids only'
complete -c sbx -n '__sbx_opts_for ps' -s q -l quiet -d 'Print pids only'
complete -c sbx -n '__sbx_opts_for wait' -l timeout -x -d 'Give up after SECONDS (error TIMEOUT)'
complete -c sbx -n '__sbx_opts_for terminate' -l rm -d 'Also remove the sandbox and its files'
complete -c sbx -n '__sbx_opts_for rm' -s f -l force -d 'Terminate running sandboxes first'
complete -c sbx -n '__sbx_opts_for commit' -s t -l tag -x -a '(__sbx_images)' -d 'Tag the image NAME'
complete -c sbx -n '__sbx_opts_for import' -s t -l tag -x -a '(__sbx_images)' -d 'Tag the imported image NAME'
complete -c sbx -n '__sbx_opts_for export' -l compression -x -a 'gzip none' -d 'How the layers are stored (default gzip)'
complete -c sbx -n '__sbx_opts_for rmi' -s f -l force -d 'Remove even if sandboxes were made from it'
complete -c sbx -n '__sbx_opts_for restore' -s n -l count -x -a '1 2 4 8' -d 'Start N sandboxes from the snapshot (1..64, default 1)'

# net
complete -c sbx -n '__sbx_opts_for net' -l block -d 'Nothing out, no DNS (the interface stays)'
complete -c sbx -n '__sbx_opts_for net' -l allow -x -d 'Only these destinations (CIDR), plus DNS; repeatable'
complete -c sbx -n '__sbx_opts_for net' -l open -d 'The internet (the refused ranges stay refused)'

# build
complete -c sbx -n '__sbx_opts_for build' -s f -l file -r -F -d 'The blueprint (default CONTEXT/blueprint.json; - for stdin)'
complete -c sbx -n '__sbx_opts_for build' -s t -l tag -x -a '(__sbx_images)' -d 'Tag the image NAME'
complete -c sbx -n '__sbx_opts_for build' -l no-cache -d 'Run every step again, whatever the cache holds'
complete -c sbx -n '__sbx_opts_for build' -l runtime -x -a 'runsc runc' -d 'Runtime of the build sandboxes'

# Operands: sandboxes, the pid and action of proc, the verb and host files
# of fs, the operands of cp, the file or directory of import, the image and
# file of export, the context directory of build, images for tag and rmi,
# and snapshots for restore and rmsnap
complete -c sbx -n '__sbx_operand 0 exec run-code ps proc fs status wait logs ttl commit snapshot stats net expose urls' -a '(__sbx_sandboxes)' -d Sandbox
complete -c sbx -n '__sbx_operand 1 proc' -a '(__sbx_pids)' -d Process
complete -c sbx -n '__sbx_operand 2 proc' -a 'status wait kill logs' -d Action
complete -c sbx -n '__sbx_operand 1 fs' -a read -d 'Print a file'
complete -c sbx -n '__sbx_operand 1 fs' -a write -d 'Replace a file with stdin'
complete -c sbx -n '__sbx_operand 1 fs' -a upload -d 'Copy a host file in'
complete -c sbx -n '__sbx_operand 1 fs' -a download -d 'Copy a file out to the host'
complete -c sbx -n '__sbx_operand 1 fs' -a ls -d 'List a directory'
complete -c sbx -n '__sbx_operand 1 fs' -a stat -d 'Describe an entry'
complete -c sbx -n '__sbx_operand 1 fs' -a mkdir -d 'Make a directory'
complete -c sbx -n '__sbx_operand 1 fs' -a rm -d 'Remove a file'
complete -c sbx -n '__sbx_operand 1 fs' -a rmdir -d 'Remove a directory'
complete -c sbx -n '__sbx_operand 1 fs' -a find -d 'Search files for a pattern'
complete -c sbx -n '__sbx_operand 1 fs' -a replace -d 'Replace a text in files'
complete -c sbx -n '__sbx_operand 1 fs' -a watch -d 'Print changes as they happen'
complete -c sbx -n __sbx_fs_host_file -F
complete -c sbx -n __sbx_cp_host -F -a '(__sbx_cp_refs)'
complete -c sbx -n '__sbx_operand any terminate rm pause resume' -a '(__sbx_sandboxes)' -d Sandbox
complete -c sbx -n '__sbx_operand 0 import' -F
complete -c sbx -n '__sbx_operand 0 export' -a '(__sbx_images)' -d Image
complete -c sbx -n '__sbx_operand 1 export' -F
complete -c sbx -n '__sbx_operand 0 build' -x -a '(__fish_complete_directories)' -d Context
complete -c sbx -n '__sbx_operand 0 tag' -a '(__sbx_images)' -d Image
complete -c sbx -n '__sbx_operand 1 tag' -a '(__sbx_images)' -d 'New tag'
complete -c sbx -n '__sbx_operand any rmi' -a '(__sbx_images)' -d Image
complete -c sbx -n '__sbx_operand 0 restore' -a '(__sbx_snapshots)' -d Snapshot
complete -c sbx -n '__sbx_operand any rmsnap' -a '(__sbx_snapshots)' -d Snapshot
complete -c sbx -n '__sbx_operand 0 help' -a 'create run exec run-code ps proc fs cp ls status wait terminate rm logs pause resume commit snapshot restore snapshots rmsnap net expose urls ttl stats images import export build tag rmi info gc version help' -d Command
