// SPDX-License-Identifier: GPL-2.0
/*
 * kvm-exits N [GAP_US [BURST]]: a one-vCPU KVM guest that writes to an
 * I/O port in a loop, run until N of those writes have come back to us
 * as KVM_EXIT_IO, GAP_US microseconds apart (default 0) but for the
 * last BURST (default 0), which follow each other at once. Each write is one
 * kvm:kvm_exit (reason "io") followed, once we run the vCPU again, by
 * one kvm:kvm_entry: perf kvm stat live counts N - 1 "io" exits, the
 * last having no entry after it. Used by scripts/guest/perf-kvm-exit.sh
 * in a TCG guest, whose emulated SVM lets kvm_amd load.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	/* Real mode at 0x1000: out 0x10, al; jmp back to it (hlt: never). */
	static const unsigned char code[] = { 0xe6, 0x10, 0xeb, 0xfc, 0xf4 };
	struct kvm_userspace_memory_region region;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_run *run;
	long n = argc > 1 ? atol(argv[1]) : 1000, io = 0;
	long gap_us = argc > 2 ? atol(argv[2]) : 0;
	long burst = argc > 3 ? atol(argv[3]) : 0;
	struct timespec gap = { gap_us / 1000000, gap_us % 1000000 * 1000 };
	int kvm, vm, vcpu, size;
	void *mem;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		perror("/dev/kvm");
		return 2;
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		perror("KVM_CREATE_VM");
		return 2;
	}
	mem = mmap(NULL, 0x4000, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 2;
	memcpy((char *)mem + 0x1000, code, sizeof(code));
	memset(&region, 0, sizeof(region));
	region.memory_size = 0x4000;
	region.userspace_addr = (unsigned long)mem;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		perror("KVM_SET_USER_MEMORY_REGION");
		return 2;
	}
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vcpu < 0 || size <= 0) {
		perror("KVM_CREATE_VCPU");
		return 2;
	}
	run = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		return 2;
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		return 2;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
		return 2;
	memset(&regs, 0, sizeof(regs));
	regs.rip = 0x1000;
	regs.rflags = 2;
	if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		return 2;
	while (io < n) {
		if (ioctl(vcpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR)
				continue;
			perror("KVM_RUN");
			return 1;
		}
		if (run->exit_reason != KVM_EXIT_IO) {
			fprintf(stderr, "kvm-exits: exit reason %u after %ld\n", run->exit_reason, io);
			return 1;
		}
		io++;
		if (gap_us && io < n - burst)
			nanosleep(&gap, NULL);
	}
	printf("kvm-exits: %ld port writes\n", io);
	return 0;
}
