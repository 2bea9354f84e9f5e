"""Rule rehearsal_models: tiny stand-ins for every hub model of a configuration
(personalir.rehearsal.standins)."""

import _bootstrap  # noqa: F401
from personalir.rehearsal.standins import main

if __name__ == "__main__":
    main()
