# tests/bench/gpu_python.bash, sourced by the GPU benchmarks: gpu_python
# NAME sets PY to the first python3 (HVD_TEST_PYTHON, Debian's, the
# PATH's) whose torch sees a GPU, with libhvd built with CUDA and NCCL;
# else it says in one line why NAME is skipped, and returns 1.
gpu_python() {
	local p
	PY=
	for p in ${HVD_TEST_PYTHON:-} /usr/bin/python3 python3; do
		if "$p" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
			PY=$p
			break
		fi
	done
	if [ -z "$PY" ]; then
		echo "$1: skipped: no python3 here has a torch that sees a GPU"
		return 1
	fi
	if ! "$PY" -c 'import sys; sys.path.insert(0, "python"); import hvd.torch as h; sys.exit(not h.nccl_built())' 2>/dev/null; then
		echo "$1: skipped: libhvd was built without CUDA and NCCL"
		return 1
	fi
}
