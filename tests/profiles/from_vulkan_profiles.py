#!/usr/bin/env python3
"""Writes a tests/profiles/*.json file (the format tests/profile_layer/profile.cpp reads) from a
profile of KhronosGroup/Vulkan-Profiles: either a Khronos/LunarG/Android requirements profile
(minimums every conforming device meets) or a device export of vulkan.gpuinfo.org that the
repository keeps (profiles/LunarG/*/vp_gpuinfo_*.json).

  from_vulkan_profiles.py REPO_DIR COMMIT PATH PROFILE_NAME OUT [--type discrete|integrated]

REPO_DIR is a git checkout; the file is read at COMMIT, which the output cites. Only the fields
the layer applies are copied. For a requirements profile, a feature it does not require is
written false (a device that meets only the profile may lack it) and the extension list is the
profile's; for a device export, every value is the device's."""
import json
import subprocess
import sys

LIMITS = """maxComputeSharedMemorySize maxComputeWorkGroupInvocations maxComputeWorkGroupSize
maxComputeWorkGroupCount maxStorageBufferRange maxUniformBufferRange maxPushConstantsSize
maxMemoryAllocationCount maxBoundDescriptorSets maxPerStageDescriptorStorageBuffers
maxPerStageDescriptorUniformBuffers maxPerStageResources maxDescriptorSetStorageBuffers
maxDescriptorSetStorageBuffersDynamic maxDescriptorSetUniformBuffers maxTexelBufferElements
minStorageBufferOffsetAlignment minUniformBufferOffsetAlignment minTexelBufferOffsetAlignment
nonCoherentAtomSize timestampComputeAndGraphics""".split()
ALIGNMENTS = {"minStorageBufferOffsetAlignment", "minUniformBufferOffsetAlignment",
              "minTexelBufferOffsetAlignment", "nonCoherentAtomSize"}
FEATURES = """robustBufferAccess shaderFloat64 shaderInt64 shaderInt16 storageBuffer16BitAccess
uniformAndStorageBuffer16BitAccess storagePushConstant16 shaderFloat16 shaderInt8
storageBuffer8BitAccess uniformAndStorageBuffer8BitAccess timelineSemaphore bufferDeviceAddress
vulkanMemoryModel vulkanMemoryModelDeviceScope subgroupSizeControl computeFullSubgroups
maintenance4 cooperativeMatrix""".split()
# Vulkan's "Required Limits" (the specification's Limits chapter, table "Required Limits").
CORE_MINIMUMS = {"maxComputeSharedMemorySize": 16384, "maxComputeWorkGroupInvocations": 128,
                 "maxComputeWorkGroupSize": [128, 128, 64],
                 "maxComputeWorkGroupCount": [65535, 65535, 65535],
                 "maxStorageBufferRange": 134217728, "maxUniformBufferRange": 16384,
                 "maxPushConstantsSize": 128, "maxBoundDescriptorSets": 4,
                 "maxPerStageDescriptorStorageBuffers": 4, "maxPerStageResources": 128,
                 "maxDescriptorSetStorageBuffers": 24, "minStorageBufferOffsetAlignment": 256,
                 "minUniformBufferOffsetAlignment": 256, "minTexelBufferOffsetAlignment": 256,
                 "nonCoherentAtomSize": 256, "maxTexelBufferElements": 65536}
SUBGROUP_OPS = {"VK_SUBGROUP_FEATURE_BASIC_BIT": "basic", "VK_SUBGROUP_FEATURE_VOTE_BIT": "vote",
                "VK_SUBGROUP_FEATURE_ARITHMETIC_BIT": "arithmetic",
                "VK_SUBGROUP_FEATURE_BALLOT_BIT": "ballot",
                "VK_SUBGROUP_FEATURE_SHUFFLE_BIT": "shuffle",
                "VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT": "shuffle_relative",
                "VK_SUBGROUP_FEATURE_CLUSTERED_BIT": "clustered",
                "VK_SUBGROUP_FEATURE_QUAD_BIT": "quad"}


def capability_blocks(doc, name):
    """The capability blocks a profile requires, its required profiles' first; of a list of
    alternatives, the first."""
    prof = doc["profiles"][name]
    blocks = []
    for req in prof.get("profiles", []):  # required profiles, when in the same file
        if req in doc["profiles"]:
            blocks += capability_blocks(doc, req)
    for c in prof["capabilities"]:
        blocks.append(doc["capabilities"][c[0] if isinstance(c, list) else c])
    return blocks


def version_string(v):
    return f"{v >> 22}.{(v >> 12) & 0x3ff}.{v & 0xfff}"


def main():
    repo, commit, path, name, out = sys.argv[1:6]
    dev_type = sys.argv[7] if len(sys.argv) > 7 and sys.argv[6] == "--type" else None
    doc = json.loads(subprocess.check_output(["git", "-C", repo, "show", f"{commit}:{path}"]))
    prof = doc["profiles"][name]
    blocks = capability_blocks(doc, name)
    device_export = "gpuinfo" in prof.get("description", "")
    limits, features, extensions, props, subgroup = {}, {}, set(), {}, None
    for b in blocks:
        extensions |= set(b.get("extensions", {}))
        for struct in b.get("features", {}).values():
            for k, v in struct.items():
                if k in FEATURES and isinstance(v, bool):
                    features[k] = features.get(k, False) or v
        p = b.get("properties", {})
        for k, v in p.get("VkPhysicalDeviceProperties", {}).get("limits", {}).items():
            if k not in LIMITS:
                continue
            if k in limits and not device_export:  # every block holds: the strictest requirement
                if isinstance(v, list):
                    v = [max(a, b) for a, b in zip(limits[k], v)]
                elif k in ALIGNMENTS:
                    v = min(limits[k], v)
                elif isinstance(v, bool):
                    v = limits[k] or v
                else:
                    v = max(limits[k], v)
            limits[k] = v
        dp = p.get("VkPhysicalDeviceProperties", {})
        if "vendorID" in dp:
            props["vendorID"] = dp["vendorID"]
        if "deviceID" in dp:
            props["deviceID"] = dp["deviceID"]
        if "apiVersion" in dp:
            props["apiVersion"] = version_string(dp["apiVersion"])
        for s in ("VkPhysicalDeviceDriverPropertiesKHR", "VkPhysicalDeviceDriverProperties",
                  "VkPhysicalDeviceVulkan12Properties"):
            if "driverName" in p.get(s, {}):
                props["driverName"] = p[s]["driverName"]
                props["driverInfo"] = p[s].get("driverInfo", "")
        for s, key in (("VkPhysicalDeviceSubgroupProperties", "supportedOperations"),
                       ("VkPhysicalDeviceVulkan11Properties", "subgroupSupportedOperations")):
            if key in p.get(s, {}):
                subgroup = sorted({SUBGROUP_OPS[o] for o in p[s][key] if o in SUBGROUP_OPS})
        for s in ("VkPhysicalDeviceVulkan11Properties", "VkPhysicalDeviceMaintenance3Properties",
                  "VkPhysicalDeviceMaintenance3PropertiesKHR"):
            if "maxMemoryAllocationSize" in p.get(s, {}):
                props["maxMemoryAllocationSize"] = p[s]["maxMemoryAllocationSize"]
        for s in ("VkPhysicalDeviceVulkan13Properties", "VkPhysicalDeviceMaintenance4Properties",
                  "VkPhysicalDeviceMaintenance4PropertiesKHR"):
            if "maxBufferSize" in p.get(s, {}):
                props["maxBufferSize"] = p[s]["maxBufferSize"]
    if not device_export:
        props["apiVersion"] = prof["api-version"]
        # Not required: a device meeting only this profile may lack it.
        features = {k: features.get(k, False) for k in FEATURES}
        if subgroup is None:
            subgroup = ["basic"]  # all Vulkan 1.1 guarantees, in compute only
        # A limit the profile leaves out is at Vulkan's own minimum (the specification's
        # "Required Limits" table), which every profile includes.
        for k, v in CORE_MINIMUMS.items():
            limits.setdefault(k, v)
    else:
        features = {k: v for k, v in features.items() if v is False}
        props["deviceName"] = prof["label"].split(" driver ")[0]
    if dev_type:
        props["deviceType"] = dev_type
    result = {
        "name": name,
        "source": {
            "repository": "https://github.com/KhronosGroup/Vulkan-Profiles",
            "commit": commit,
            "path": path,
            "label": prof.get("label", ""),
            "description": prof.get("description", ""),
            "converted_by": "tests/profiles/from_vulkan_profiles.py",
        },
        "properties": props,
        "limits": {k: limits[k] for k in LIMITS if k in limits},
        "notes": ("Requirements profile: a feature it does not require is false and a limit it "
                  "does not state is Vulkan's required minimum." if not device_export else
                  "Device export: the device's values as vulkan.gpuinfo.org reported them."),
        "features": features,
        "extensions": sorted(extensions),
    }
    if subgroup is not None:
        result["subgroup"] = {"supportedOperations": subgroup}
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
