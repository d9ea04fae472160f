//go:build yaz_vulkan

// The Vulkan side of package ggmlgpu, linked in with ggml's Vulkan backend
// (build tag yaz_vulkan, which the Makefile sets when scripts/setup-whisper.sh
// built that backend; see vulkan.go).
//
// ggml-vulkan is linked in statically, but the Vulkan loader is not: the
// binaries must start on a machine without libvulkan.so.1. ggml-vulkan
// calls the loader through vulkan.hpp's dynamic dispatcher, which it fills
// from vkGetInstanceProcAddr, and three loader functions directly; this
// file defines those four, each opening libvulkan.so.1 on first use and
// calling the loader's own. ggml_backend_vk_reg, which ggml's backend
// registry calls once, is wrapped (-Wl,--wrap=ggml_backend_vk_reg): with no
// loader it registers no Vulkan backend (ggml's registry skips a NULL
// registration), and ggml then knows the CPU alone.
//
// ggml-vulkan shows only discrete and integrated GPUs unless
// GGML_VK_VISIBLE_DEVICES names others: a machine with a software device
// only (Mesa's lavapipe) would list no Vulkan device at all. The wrap
// lists the physical devices itself first and, when the variable is not
// set, sets it to all of them, remembering each one's Vulkan device type:
// package asr's device list (through VulkanType) then shows every device and marks the software
// ones, which --device auto never takes.

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <vulkan/vulkan_core.h>
#include <ggml-backend.h>

#include "yaz_vulkan.h"

static pthread_once_t yaz_vk_once = PTHREAD_ONCE_INIT;
static void *yaz_vk_lib;
static PFN_vkGetInstanceProcAddr yaz_vk_gipa;
static PFN_vkGetPhysicalDeviceFeatures2 yaz_vk_features2;
static PFN_vkCmdCopyBuffer yaz_vk_copy_buffer;

static void yaz_vk_open_once(void) {
	const char *name = getenv("YAZ_VULKAN_LOADER"); // tests: a loader that is not there
	yaz_vk_lib = dlopen(name && *name ? name : "libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!yaz_vk_lib) {
		return;
	}
	yaz_vk_gipa = (PFN_vkGetInstanceProcAddr)dlsym(yaz_vk_lib, "vkGetInstanceProcAddr");
	yaz_vk_features2 = (PFN_vkGetPhysicalDeviceFeatures2)dlsym(yaz_vk_lib, "vkGetPhysicalDeviceFeatures2");
	yaz_vk_copy_buffer = (PFN_vkCmdCopyBuffer)dlsym(yaz_vk_lib, "vkCmdCopyBuffer");
	if (!yaz_vk_gipa || !yaz_vk_features2 || !yaz_vk_copy_buffer) {
		dlclose(yaz_vk_lib);
		yaz_vk_lib = NULL;
		yaz_vk_gipa = NULL;
	}
}

// yaz_vk_loader reports whether libvulkan.so.1 was found and opened.
int yaz_vk_loader(void) {
	pthread_once(&yaz_vk_once, yaz_vk_open_once);
	return yaz_vk_gipa != NULL;
}

// The loader functions ggml-vulkan calls by name. Only reached once
// __wrap_ggml_backend_vk_reg found the loader.
VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance, const char *name) {
	if (!yaz_vk_loader()) {
		return NULL;
	}
	return yaz_vk_gipa(instance, name);
}

VKAPI_ATTR void VKAPI_CALL vkGetPhysicalDeviceFeatures2(VkPhysicalDevice dev, VkPhysicalDeviceFeatures2 *features) {
	if (yaz_vk_loader()) {
		yaz_vk_features2(dev, features);
	}
}

VKAPI_ATTR void VKAPI_CALL vkCmdCopyBuffer(VkCommandBuffer cmd, VkBuffer src, VkBuffer dst, uint32_t n, const VkBufferCopy *regions) {
	if (yaz_vk_loader()) {
		yaz_vk_copy_buffer(cmd, src, dst, n, regions);
	}
}

// ---- the physical devices ---------------------------------------------------

// yaz_vk_types[k] is the VkPhysicalDeviceType of ggml's Vulkan device k
// (Vulkan0, Vulkan1 ...); -1: unknown.
#define YAZ_VK_MAX 64
static int yaz_vk_types[YAZ_VK_MAX];
static int yaz_vk_n;

// yaz_vk_physical lists the physical devices' types in the loader's order;
// it returns how many (0: none, or no Vulkan instance could be made).
static int yaz_vk_physical(int *types, int max) {
	PFN_vkCreateInstance create = (PFN_vkCreateInstance)yaz_vk_gipa(NULL, "vkCreateInstance");
	if (!create) {
		return 0;
	}
	VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "yazses", .apiVersion = VK_API_VERSION_1_2};
	VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
	VkInstance inst = VK_NULL_HANDLE;
	if (create(&info, NULL, &inst) != VK_SUCCESS) {
		return 0;
	}
	PFN_vkEnumeratePhysicalDevices enumerate = (PFN_vkEnumeratePhysicalDevices)yaz_vk_gipa(inst, "vkEnumeratePhysicalDevices");
	PFN_vkGetPhysicalDeviceProperties props = (PFN_vkGetPhysicalDeviceProperties)yaz_vk_gipa(inst, "vkGetPhysicalDeviceProperties");
	PFN_vkDestroyInstance destroy = (PFN_vkDestroyInstance)yaz_vk_gipa(inst, "vkDestroyInstance");
	int n = 0;
	if (enumerate && props) {
		VkPhysicalDevice devs[YAZ_VK_MAX];
		uint32_t count = YAZ_VK_MAX;
		VkResult r = enumerate(inst, &count, devs);
		if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
			for (uint32_t i = 0; i < count && (int)i < max; i++) {
				VkPhysicalDeviceProperties p;
				props(devs[i], &p);
				types[n++] = (int)p.deviceType;
			}
		}
	}
	if (destroy) {
		destroy(inst, NULL);
	}
	return n;
}

ggml_backend_reg_t __real_ggml_backend_vk_reg(void);

// yaz_vk_off, set before ggml's registry is made (--device cpu), keeps
// Vulkan out of the process: no loader, no driver, no instance.
static int yaz_vk_off;

void yaz_vk_disable(void) { __atomic_store_n(&yaz_vk_off, 1, __ATOMIC_RELAXED); }

ggml_backend_reg_t __wrap_ggml_backend_vk_reg(void) {
	if (__atomic_load_n(&yaz_vk_off, __ATOMIC_RELAXED) || !yaz_vk_loader()) {
		return NULL;
	}
	int phys[YAZ_VK_MAX];
	int n = yaz_vk_physical(phys, YAZ_VK_MAX);
	if (n == 0) {
		return NULL; // no instance or no device: nothing for ggml to show
	}
	const char *visible = getenv("GGML_VK_VISIBLE_DEVICES");
	if (visible == NULL) {
		char list[YAZ_VK_MAX * 4] = "";
		for (int i = 0; i < n; i++) {
			char one[8];
			snprintf(one, sizeof one, i ? ",%d" : "%d", i);
			strcat(list, one);
			yaz_vk_types[i] = phys[i];
		}
		yaz_vk_n = n;
		setenv("GGML_VK_VISIBLE_DEVICES", list, 1);
	} else {
		// The person chose: ggml's devices are the ones named, in order.
		char *copy = strdup(visible), *save = NULL;
		for (char *tok = strtok_r(copy, ", ", &save); tok && yaz_vk_n < YAZ_VK_MAX; tok = strtok_r(NULL, ", ", &save)) {
			int i = atoi(tok);
			yaz_vk_types[yaz_vk_n++] = i >= 0 && i < n ? phys[i] : -1;
		}
		free(copy);
	}
	return __real_ggml_backend_vk_reg();
}

int yaz_vk_device_type(int k) {
	return k >= 0 && k < yaz_vk_n ? yaz_vk_types[k] : -1;
}
