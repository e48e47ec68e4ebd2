/** @ferry/writer: public surface. */
export {};
