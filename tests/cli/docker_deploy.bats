#!/usr/bin/env bats
# docs/kubernetes.md's "Deploy in a few commands", run as written on a real
# Docker engine (tests/docker/engine.bash) up to the step that needs an API
# server. What differs from a user's run, and why: BASE=cpu instead of the
# first line's cuda (NVIDIA's base images cannot be pulled here), the engine's
# offline Debian base and the local kubectl binary passed to make images as
# the other docker tests do, no `docker push` (no registry here), and the
# editor step done by a script that makes exactly the edit the docs describe.
# NO Kubernetes API server runs here: at `kubectl apply -k k8s/`, what apply
# would send is built with `kubectl kustomize k8s/` and checked instead.

load ../docker/common

setup_file() { docker_file_setup; }
teardown_file() { docker_file_teardown; }

setup() { docker_test_setup; }
teardown() { docker_test_teardown; }

@test "docs/kubernetes.md's deploy steps run as written up to kubectl apply" {
	echo "# NO Kubernetes API server ran: the steps stop at kubectl apply; kubectl kustomize builds what it would send" >&3
	# The steps: the indented block under the heading, in order.
	sed -n '/^## Deploy in a few commands$/,/^[^ ]/p' "$AAH_ROOT/docs/kubernetes.md" |
		sed -n 's/^    //p' > steps.sh
	cat steps.sh
	[ "$(head -1 steps.sh | cut -d' ' -f1)" = "BASE=cuda" ]
	grep -qx 'kubectl apply -k k8s/ .*' steps.sh
	# Everything before kubectl apply, in a copy of the tracked tree (the
	# editor changes k8s/), with BASE=cpu in place of the first line.
	mkdir src
	(cd "$AAH_ROOT" && git ls-files -z | xargs -0 cp --parents -t "$WORK/src")
	{
		echo 'set -eux'
		echo 'BASE=cpu'
		sed -n '2,/^kubectl apply/p' steps.sh | sed '$d'
	} > before-apply.sh
	# The edit the docs describe: the trial image in config.yml, the
	# master's in kustomization.yaml, both as the cluster pulls them.
	cat > editor.sh <<-'EOF2'
	#!/bin/sh
	set -eu
	for f do
		case $f in
		*/config.yml) sed -i "s#^  image: .*#  image: $REGISTRY/aah-trial:$BASE#" "$f" ;;
		*/kustomization.yaml) sed -i -e "s#^  newName: .*#  newName: $REGISTRY/aah-master#" \
			-e "s#^  newTag: .*#  newTag: $BASE#" "$f" ;;
		esac
	done
	EOF2
	chmod +x editor.sh
	mkdir bin
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$AAH_DOCKER" > bin/docker
	chmod +x bin/docker
	(cd src && PATH="$WORK/bin:$PATH" EDITOR=$WORK/editor.sh BASE=cpu REGISTRY= \
		DEBIAN_IMAGE=aah-base:bookworm KUBECTL_BIN="$(readlink -f /usr/bin/kubectl)" \
		bash -c 'export BASE REGISTRY; . ../before-apply.sh' ) > steps.log 2>&1 || { tail -n 60 steps.log; false; }
	grep -q 'make images IMAGE_BASE=cpu' steps.log || { head -n 20 steps.log; false; }
	# The images the steps tagged are in the engine.
	for i in aah-trial aah-master; do
		"$AAH_DOCKER" image inspect "registry.example.com/aah/$i:cpu" >/dev/null
	done
	# kubectl apply -k would send these: the master Job names the master
	# image the steps built; the config in the ConfigMap names the trial image.
	/usr/bin/kubectl kustomize src/k8s > all.yaml
	"$AAH_ROOT/tests/fixtures/k8s/k8s_check.py" --quiet all.yaml
	master=$(/usr/bin/python3 -c 'import sys, yaml; print(next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == "Job")["spec"]["template"]["spec"]["containers"][0]["image"])' all.yaml)
	[ "$master" = registry.example.com/aah/aah-master:cpu ]
	/usr/bin/python3 -c 'import sys, yaml; cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == "ConfigMap"); open("config.yml", "w").write(cm["data"]["config.yml"])' all.yaml
	aah-runner render -c config.yml > trial.yaml
	trial=$(sed -n 's/^        image: "\(.*\)"$/\1/p' trial.yaml)
	[ "$trial" = registry.example.com/aah/aah-trial:cpu ]
	"$AAH_DOCKER" image inspect "$master" "$trial" >/dev/null
	# The images start: the trial image's trainer, the master's runner and kubectl.
	"$AAH_DOCKER" run --rm --network host --entrypoint aah-trial "$trial" --help | grep -q -- '--resume'
	"$AAH_DOCKER" run --rm --network host --entrypoint kubectl "$master" version --client | grep -q 'Client Version'
}
