"""Text: decoding bytes to canonical text (`textio`), sentences, and the splitters that cut
inside a section (`splitting`). Imports only the ground floor (`model`, `errors`)."""
