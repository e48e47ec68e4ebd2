/** @ferry/cli: public surface. */
export {};
