#!/usr/bin/env bats
# The cuda backend's kernel families compiled as they were written to be
# (tests/gpu/check-code.py): no stack frame or spill, 16-byte global loads
# in every vector instance, no double-precision square root or division
# in a kernel over values. Here on the PTX and ptxas's reports that make
# keeps beside each family's object; on the GPU machine tests/gpu/lease.sh
# checks the SASS (cuobjdump).

load helpers

@test "the kernel families' compiled code: 16-byte loads, no f64 sqrt or division over values, no stack" {
	ls "$AAH_ROOT/$AAH_BUILD"/obj/kernels/cuda/cuda_bn.o >/dev/null 2>&1 ||
		skip "this build has no cuda backend (make config-info: nvcc and cuDNN not found)"
	cd "$AAH_ROOT"
	run /usr/bin/python3 tests/gpu/check-code.py ptx "$AAH_BUILD"
	echo "$output" | tail -n 5
	[ "$status" -eq 0 ]
	[[ $output == *"check-code (ptx): "*" kernels, 0 failures"* ]]
	n=$(sed -n 's/^check-code (ptx): \([0-9]*\) kernels.*/\1/p' <<<"$output")
	[ "$n" -ge 100 ]
	# the batchnorm's vector instances are among them, with their loads
	[[ $output == *"ok cuda_bn: _ZN3cuk4normI13__nv_bfloat16Li8EE"*"128-bit loads"* ]]
}

@test "the check fails on a kernel that divides in double over values" {
	ls "$AAH_ROOT/$AAH_BUILD"/obj/kernels/cuda/cuda_bn.o >/dev/null 2>&1 ||
		skip "this build has no cuda backend (make config-info: nvcc and cuDNN not found)"
	T=$(mktemp -d)
	mkdir -p "$T/obj/kernels/cuda"
	cp "$AAH_ROOT/$AAH_BUILD"/obj/kernels/cuda/cuda_bn.o* "$T/obj/kernels/cuda/"
	# a planted double division in the normalising kernel's body
	sed -i '0,/^\.visible \.entry _ZN3cuk4normI13__nv_bfloat16Li8EE/{//a\
	div.rn.f64 	%fd1, %fd2, %fd3;
	}' "$T/obj/kernels/cuda/cuda_bn.o.ptx"
	cd "$AAH_ROOT"
	run /usr/bin/python3 tests/gpu/check-code.py ptx "$T"
	rm -rf "$T"
	[ "$status" -eq 1 ]
	[[ $output == *"FAILED: cuda_bn: _ZN3cuk4normI13__nv_bfloat16Li8EE"*"double-precision div.rn.f64 in a kernel over values"* ]]
}
