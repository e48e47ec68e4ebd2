/** @ferry/runtime: public surface. */
export {};
