/** @ferry/engines: public surface. */
export {};
