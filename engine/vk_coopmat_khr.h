#pragma once
// VK_KHR_cooperative_matrix's API, for Vulkan headers older than 1.3.255 (Debian 12 ships
// 1.3.239): the values are the registry's, so a build against old headers still queries and
// enables the extension on a driver that has it. Newer headers define all of this themselves.
#include <vulkan/vulkan.h>

#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"

constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR =
    VkStructureType(1000506000);
constexpr VkStructureType VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR =
    VkStructureType(1000506001);
constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR =
    VkStructureType(1000506002);

enum VkComponentTypeKHR {
  VK_COMPONENT_TYPE_FLOAT16_KHR = 0,
  VK_COMPONENT_TYPE_FLOAT32_KHR = 1,
  VK_COMPONENT_TYPE_FLOAT64_KHR = 2,
  VK_COMPONENT_TYPE_SINT8_KHR = 3,
  VK_COMPONENT_TYPE_SINT16_KHR = 4,
  VK_COMPONENT_TYPE_SINT32_KHR = 5,
  VK_COMPONENT_TYPE_SINT64_KHR = 6,
  VK_COMPONENT_TYPE_UINT8_KHR = 7,
  VK_COMPONENT_TYPE_UINT16_KHR = 8,
  VK_COMPONENT_TYPE_UINT32_KHR = 9,
  VK_COMPONENT_TYPE_UINT64_KHR = 10,
  VK_COMPONENT_TYPE_MAX_ENUM_KHR = 0x7FFFFFFF
};
enum VkScopeKHR {
  VK_SCOPE_DEVICE_KHR = 1,
  VK_SCOPE_WORKGROUP_KHR = 2,
  VK_SCOPE_SUBGROUP_KHR = 3,
  VK_SCOPE_QUEUE_FAMILY_KHR = 5,
  VK_SCOPE_MAX_ENUM_KHR = 0x7FFFFFFF
};
struct VkCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  uint32_t MSize;
  uint32_t NSize;
  uint32_t KSize;
  VkComponentTypeKHR AType;
  VkComponentTypeKHR BType;
  VkComponentTypeKHR CType;
  VkComponentTypeKHR ResultType;
  VkBool32 saturatingAccumulation;
  VkScopeKHR scope;
};
struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};
struct VkPhysicalDeviceCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  VkShaderStageFlags cooperativeMatrixSupportedStages;
};
typedef VkResult(VKAPI_PTR* PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice physicalDevice, uint32_t* pPropertyCount,
    VkCooperativeMatrixPropertiesKHR* pProperties);
#endif
