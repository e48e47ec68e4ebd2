/** @ferry/store: public surface. */
export {};
