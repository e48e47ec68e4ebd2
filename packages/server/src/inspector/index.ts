/**
 * The inspector's public face: the built-in page's routes (`inspectorRoutes`), the hub behind its
 * event stream, the machine graph the page draws, and the Stately inspector bridge.
 */
export { InspectorAssetsMissingError, InvalidInspectorUrlError } from './errors.js';
export {
  type HubMessage,
  type InspectorDataset,
  InspectorHub,
  type InspectorHubOptions,
  type InspectorSnapshot,
  inspectorDataset,
} from './hub.js';
export {
  datasetMachineGraph,
  eventLabel,
  type GraphEdge,
  type GraphState,
  type GraphTrigger,
  type MachineGraph,
  machineGraph,
  type StateNodeLike,
} from './machine-graph.js';
export { type InspectorRoutesOptions, inspectorRoutes } from './routes.js';
export { type StatelyBridge, type StatelyBridgeOptions, startStatelyBridge } from './stately-bridge.js';
