/** @ferry/server: public surface. */
export {};
