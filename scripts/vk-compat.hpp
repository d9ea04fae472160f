// vk-compat.hpp: what ggml-vulkan (whisper.cpp 1.9.1) needs of vulkan.hpp
// beyond Debian 12's Vulkan headers (1.3.239): the VK_EXT_layer_settings
// types (headers 1.3.261 and later), which it uses only to ask the
// validation layer for best-practice checks. scripts/setup-whisper.sh puts
// this file as vulkan/vulkan.hpp in a folder on CPLUS_INCLUDE_PATH when the
// installed headers are older; it includes the real header first. Nothing
// else of the build sees it.
#pragma once
#include_next <vulkan/vulkan.hpp>
#include <cstdint>
#include <vector>

#if VK_HEADER_VERSION < 261
namespace vk {
enum class LayerSettingTypeEXT : int32_t { eBool32 = 0 };
struct LayerSettingEXT {
	const char *pLayerName;
	const char *pSettingName;
	LayerSettingTypeEXT type;
	uint32_t valueCount;
	const void *pValues;
};
// The layout of VkLayerSettingsCreateInfoEXT; loaders and drivers that do
// not know its sType skip it in the pNext chain.
struct LayerSettingsCreateInfoEXT {
	int32_t sType = 1000496000; // VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT
	const void *pNext = nullptr;
	uint32_t settingCount;
	const LayerSettingEXT *pSettings;
	explicit LayerSettingsCreateInfoEXT(const std::vector<LayerSettingEXT> &s)
		: settingCount(static_cast<uint32_t>(s.size())), pSettings(s.data()) {}
};
} // namespace vk
#endif
