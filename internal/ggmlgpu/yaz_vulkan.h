// Declarations of yaz_vulkan.c (build tag yaz_vulkan; see vulkan.go).
#ifndef YAZ_VULKAN_H
#define YAZ_VULKAN_H

int yaz_vk_loader(void);
int yaz_vk_device_type(int k);
void yaz_vk_disable(void);

#endif
