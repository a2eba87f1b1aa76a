/* The bundled GGUF, embedded with .incbin; the path comes from CMake (PAGODA_BUNDLED_MODEL_PATH). */
  .section .rodata
  .balign 64
  .global pagoda_bundled_model_begin
  .hidden pagoda_bundled_model_begin
pagoda_bundled_model_begin:
  .incbin PAGODA_BUNDLED_MODEL_PATH
  .global pagoda_bundled_model_end
  .hidden pagoda_bundled_model_end
pagoda_bundled_model_end:
  .section .note.GNU-stack,"",@progbits
