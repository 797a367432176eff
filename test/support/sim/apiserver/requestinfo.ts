// SIMULATION (test double). What a request path asks for: the authorizer's attributes.
// k8s: staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go (verbs from methods,
// list/watch/deletecollection, "/api/v1/namespaces/<ns>" as resource namespaces with
// Namespace = Name, fieldSelector metadata.name narrowing a list to a name).

/** `fieldSelector=metadata.name=<x>` narrows a list or watch to one name (a valid path segment). */
function exactNameFromQuery(query: URLSearchParams): string | undefined {
  const sel = query.get("fieldSelector");
  if (!sel) return undefined;
  for (const part of sel.split(",")) {
    const m = /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(part);
    if (
      m &&
      m[1] !== "" &&
      !m[1]!.includes("/") &&
      !m[1]!.includes("%") &&
      m[1] !== "." &&
      m[1] !== ".."
    ) {
      return m[1];
    }
  }
  return undefined;
}

export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  verb: string;
  apiPrefix: "api" | "apis" | "";
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /** The path below /api or /apis names no resource (discovery). */
  discovery: boolean;
}

const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);

export function requestInfo(method: string, path: string, query: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiPrefix: "",
    apiGroup: "",
    apiVersion: "",
    namespace: "",
    resource: "",
    subresource: "",
    name: "",
    discovery: false,
  };
  // k8s: Go's http server hands the apiserver a decoded URL.Path ("kubeadm%3Aget-nodes" is the
  // name "kubeadm:get-nodes"); requestinfo.go splits that.
  const parts = path
    .split("/")
    .filter((p) => p !== "")
    .map((p) => decodeURIComponent(p));
  if (parts[0] !== "api" && parts[0] !== "apis") return info;
  info.apiPrefix = parts[0];
  let rest = parts.slice(1);
  if (info.apiPrefix === "apis") {
    if (rest.length < 1) {
      info.discovery = true;
      return info;
    }
    info.apiGroup = rest[0]!;
    rest = rest.slice(1);
  }
  if (rest.length < 1) {
    info.discovery = true;
    return info;
  }
  info.apiVersion = rest[0]!;
  rest = rest.slice(1);
  if (rest.length < 1) {
    info.discovery = true;
    return info;
  }
  info.isResourceRequest = true;
  switch (method) {
    case "POST":
      info.verb = "create";
      break;
    case "GET":
    case "HEAD":
      info.verb = "get";
      break;
    case "PUT":
      info.verb = "update";
      break;
    case "PATCH":
      info.verb = "patch";
      break;
    case "DELETE":
      info.verb = "delete";
      break;
  }
  if (rest[0] === "namespaces") {
    if (rest.length > 1) {
      info.namespace = rest[1]!;
      if (rest.length > 2 && !NAMESPACE_SUBRESOURCES.has(rest[2]!)) rest = rest.slice(2);
    }
  }
  info.resource = rest[0] ?? "";
  if (rest.length >= 2) info.name = rest[1]!;
  if (rest.length >= 3) info.subresource = rest[2]!;
  if (info.name === "" && info.verb === "get") {
    const watch = query.get("watch");
    info.verb = watch === "true" || watch === "1" ? "watch" : "list";
    const narrowed = exactNameFromQuery(query);
    if (narrowed) info.name = narrowed;
  }
  if (info.name !== "" && info.verb === "get") {
    const watch = query.get("watch");
    if (watch === "true" || watch === "1") info.verb = "watch";
  }
  if (info.name === "" && info.verb === "delete") info.verb = "deletecollection";
  return info;
}
