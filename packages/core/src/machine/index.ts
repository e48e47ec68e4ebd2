/** The dataset machine's public face: the machine (and its factory), its types and the status view. */
export { createDatasetMachine, datasetMachine } from './dataset-machine.js';
export * from './views.js';
