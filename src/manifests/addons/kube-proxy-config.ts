import { kubeProxyConfigurationType } from "../../config/component-types.js";
import { marshalGoStruct } from "../../config/go-struct.js";
import type { Release } from "../../config/release.js";
import type { ComponentConfig } from "../../config/types.js";
import { KUBE_PROXY_CONFIG_API } from "../../config/types.js";
import { toYAML } from "../../config/yaml.js";

// The KubeProxyConfiguration text kubeadm stores in the kube-proxy ConfigMap (key config.conf).
// kubeadm decodes the document into the Go type k8s.io/kube-proxy/config/v1alpha1
// KubeProxyConfiguration, defaults only its own few fields (componentconfigs/kubeproxy.go
// Default), then marshals the struct (componentconfigs handler.Marshal): every field without
// `omitempty` is written, unset ones as Go zero values ("", 0, false, null, 0s), and fields the
// type does not know are dropped (config/component-types.ts describes the type).

/**
 * The KubeProxyConfiguration as kubeadm marshals it: every field of the v1alpha1 type, user and
 * kubeadm-defaulted values over Go zero values, unknown fields dropped. `config` is the
 * already-defaulted document (config/component-configs.ts defaultKubeProxyConfiguration).
 */
export function marshalKubeProxyConfiguration(config: ComponentConfig, release: Release): string {
  const body = marshalGoStruct(kubeProxyConfigurationType(release), config);
  return toYAML({ ...body, apiVersion: KUBE_PROXY_CONFIG_API, kind: "KubeProxyConfiguration" });
}
