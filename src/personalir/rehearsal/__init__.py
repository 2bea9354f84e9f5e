"""The dress rehearsal of the paper configuration (``config/rehearsal.yaml``, ``make
rehearsal``): tiny stand-ins for the hub models (:mod:`.standins`, built by
:mod:`.tiny_models` and :mod:`.tiny_encoders`) and the GPU check (:mod:`.gpu_check`)."""
