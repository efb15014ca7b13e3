/* util/topology.c: see topology.h. No allocation anywhere: the binding
 * runs this between fork and exec. */
#include "util/topology.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Append s (without its NUL) to p; the end. */
char *hl_put_text(char *p, const char *s)
{
	while (*s != '\0')
		*p++ = *s++;
	return p;
}

/* Append the decimal v to p; the end. */
char *hl_put_number(char *p, long v)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	while (n > 0)
		*p++ = digits[--n];
	return p;
}

/* Where sysfs is read: root, or /sys. */
static const char *sysfs(const char *root)
{
	return root != NULL && root[0] != '\0' ? root : "/sys";
}

/* The file at path into buf (NUL-terminated); its length, or -1. */
static long read_file(const char *path, char *buf, size_t cap)
{
	ssize_t got, all = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)all < cap - 1 &&
	       (got = read(fd, buf + all, cap - 1 - (size_t)all)) > 0)
		all += got;
	close(fd);
	buf[all] = '\0';
	return all > 0 ? (long)all : -1;
}

/* Read ROOT/dir<N>/leaf (dir: "devices/system/cpu/cpu") into buf
 * (NUL-terminated); its length, or -1. No allocation: this runs between
 * fork and exec. */
static long read_sys(const char *root, const char *dir, long n,
		     const char *leaf, char *buf, size_t cap)
{
	char path[512], *p = path;
	size_t rl = strlen(root), dl = strlen(dir), ll = strlen(leaf);

	if (rl + dl + ll + 28 >= sizeof(path))
		return -1;
	p = hl_put_text(p, root);
	*p++ = '/';
	p = hl_put_number(hl_put_text(p, dir), n);
	*p++ = '/';
	*hl_put_text(p, leaf) = '\0';
	return read_file(path, buf, cap);
}

/* The number at *s, moving past it; -1 if none. */
static long take_number(const char **s)
{
	long v = 0;

	if (**s < '0' || **s > '9')
		return -1;
	for (; **s >= '0' && **s <= '9'; (*s)++)
		if ((v = v * 10 + (**s - '0')) > 1L << 30)
			return -1;
	return v;
}

/* The first number of CPU cpu's topology file leaf ("0,48" or "0-1":
 * 0), or -1. */
static long topology_number(const char *root, int cpu, const char *leaf)
{
	char buf[64];
	const char *s = buf;

	if (read_sys(root, "devices/system/cpu/cpu", cpu, leaf, buf,
		     sizeof(buf)) < 0)
		return -1;
	return take_number(&s);
}

/* The CPUs of a kernel's list ("0-23,48-71") into *set. */
static void cpulist(const char *s, cpu_set_t *set)
{
	long lo, hi, x;

	CPU_ZERO(set);
	while ((lo = take_number(&s)) >= 0) {
		hi = lo;
		if (*s == '-') {
			s++;
			if ((hi = take_number(&s)) < lo)
				break;
		}
		for (x = lo; x <= hi && x < CPU_SETSIZE; x++)
			CPU_SET((int)x, set);
		if (*s != ',')
			break;
		s++;
	}
}

/* c[i].node for the CPUs in NUMA node k's cpulist; at[] maps a CPU
 * number to its index in c, or -1. Whether the node exists. */
static bool node_cpus(const char *root, long k, struct hl_cpu *c, const int *at)
{
	char buf[8192];
	cpu_set_t set;
	int x;

	if (read_sys(root, "devices/system/node/node", k, "cpulist", buf,
		     sizeof(buf)) < 0)
		return false;
	cpulist(buf, &set);
	for (x = 0; x < CPU_SETSIZE; x++)
		if (CPU_ISSET(x, &set) && at[x] >= 0)
			c[at[x]].node = (int)k;
	return true;
}

/* ROOT/bus/pci/devices/ADDR/leaf into buf, as read_sys. */
static long read_pci(const char *root, const char *addr, const char *leaf,
		     char *buf, size_t cap)
{
	char path[512], *p = path;

	if (strlen(root) + strlen(addr) + strlen(leaf) + 20 >= sizeof(path))
		return -1;
	p = hl_put_text(hl_put_text(p, root), "/bus/pci/devices/");
	p = hl_put_text(hl_put_text(p, addr), "/");
	*hl_put_text(p, leaf) = '\0';
	return read_file(path, buf, cap);
}

/* Whether PCI device addr is an NVIDIA GPU: vendor 0x10de, class display
 * (VGA 0x0300xx or 3D 0x0302xx). */
static bool nvidia_gpu(const char *root, const char *addr)
{
	char vendor[16], class[16];

	return read_pci(root, addr, "vendor", vendor, sizeof(vendor)) > 0 &&
	       strncmp(vendor, "0x10de", 6) == 0 &&
	       read_pci(root, addr, "class", class, sizeof(class)) > 0 &&
	       (strncmp(class, "0x0300", 6) == 0 ||
		strncmp(class, "0x0302", 6) == 0);
}

int hl_gpus_pci(const char *root, char (*addr)[HL_PCI_ADDR], int max)
{
	char path[512], buf[8192], *p;
	long got, at;
	int fd, n = 0, j;

	root = sysfs(root);
	if (strlen(root) + 20 >= sizeof(path))
		return 0;
	p = hl_put_text(hl_put_text(path, root), "/bus/pci/devices");
	*p = '\0';
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* getdents64, not readdir: nothing allocated. */
	while ((got = (long)getdents64(fd, buf, sizeof(buf))) > 0)
		for (at = 0; at < got;) {
			const struct dirent64 *d =
				(const struct dirent64 *)(buf + at);
			size_t len = strlen(d->d_name);

			at += d->d_reclen;
			if (d->d_name[0] == '.' || len >= HL_PCI_ADDR ||
			    n >= max || !nvidia_gpu(root, d->d_name))
				continue;
			/* In PCI bus order, as nvidia-smi numbers them. */
			for (j = n; j > 0 && strcmp(addr[j - 1], d->d_name) > 0;
			     j--)
				memcpy(addr[j], addr[j - 1], HL_PCI_ADDR);
			memcpy(addr[j], d->d_name, len + 1);
			n++;
		}
	close(fd);
	return n;
}

bool hl_gpu_cpus(const char *root, const char *addr, cpu_set_t *set)
{
	char buf[8192];

	root = sysfs(root);
	if (read_pci(root, addr, "local_cpulist", buf, sizeof(buf)) < 0)
		return false;
	cpulist(buf, set);
	return CPU_COUNT(set) > 0;
}

void hl_topology_read(const char *root, struct hl_cpu *c, int n, bool cores,
		      bool nodes)
{
	int at[CPU_SETSIZE], i;
	long v, k, misses;

	root = sysfs(root);
	for (i = 0; i < n; i++) {
		v = topology_number(root, c[i].cpu,
				    "topology/physical_package_id");
		c[i].pkg = v >= 0 ? (int)v : 0;
		v = cores ? topology_number(root, c[i].cpu,
					    "topology/thread_siblings_list")
			  : -1;
		c[i].core = v >= 0 ? (int)v : c[i].cpu;
		c[i].node = -1;
	}
	if (!nodes)
		return;
	for (i = 0; i < CPU_SETSIZE; i++)
		at[i] = -1;
	for (i = 0; i < n; i++)
		at[c[i].cpu] = i;
	/* Node numbers may have gaps: look on a while past the last. */
	for (k = 0, misses = 0; k < CPU_SETSIZE && misses < 64; k++)
		misses = node_cpus(root, k, c, at) ? 0 : misses + 1;
	for (i = 0; i < n; i++) /* no node: its package's */
		if (c[i].node < 0)
			c[i].node = CPU_SETSIZE + c[i].pkg;
}

int hl_cpus_allowed(struct hl_cpu *c)
{
	cpu_set_t allowed;
	int i, n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return -1;
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &allowed)) {
			c[n].cpu = i;
			c[n].pkg = 0;
			c[n].core = i;
			c[n++].node = -1;
		}
	return n;
}

void hl_topology_count(const struct hl_cpu *c, int n, long *packages,
		       long *cores, long *nodes)
{
	int i, j;
	bool pkg, core, node;

	*packages = *cores = *nodes = 0;
	for (i = 0; i < n; i++) {
		pkg = core = node = true; /* the first of each so far */
		for (j = 0; j < i; j++) {
			if (c[j].pkg == c[i].pkg) {
				pkg = false;
				if (c[j].core == c[i].core)
					core = false;
			}
			if (c[j].node == c[i].node)
				node = false;
		}
		*packages += pkg;
		*cores += core;
		*nodes += node;
	}
}
