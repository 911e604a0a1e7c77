export HOME=/tmp/workspace-exp/home XDG_RUNTIME_DIR=/tmp/workspace-exp/rt
cd $HOME
for i in 1 2 3 4 5; do /usr/bin/time -f "%e s" podman run --rm --network none --entrypoint true localhost/workspace-exp:1 2>&1 | tail -1; done
