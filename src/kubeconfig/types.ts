// The kubeconfig file format (client-go tools/clientcmd/api/v1 Config), in its serialized
// shape: named lists, dashed keys, base64 data fields.

export interface KubeConfigCluster {
  server: string;
  "certificate-authority-data"?: string;
  "certificate-authority"?: string;
  "tls-server-name"?: string;
  "insecure-skip-tls-verify"?: boolean;
}

export interface KubeConfigContext {
  cluster: string;
  user: string;
  namespace?: string;
}

export interface KubeConfigUser {
  "client-certificate-data"?: string;
  "client-key-data"?: string;
  "client-certificate"?: string;
  "client-key"?: string;
  token?: string;
  tokenFile?: string;
}

export interface KubeConfig {
  apiVersion: "v1";
  kind: "Config";
  clusters: { name: string; cluster: KubeConfigCluster }[];
  contexts: { name: string; context: KubeConfigContext }[];
  "current-context": string;
  /** Written by clientcmd before v1.34 only (ReleaseBehaviour.kubeconfigPreferences). */
  preferences?: Record<string, never>;
  users: { name: string; user: KubeConfigUser }[];
}
