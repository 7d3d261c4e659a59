"""Using corpusprep's outputs from other libraries (`hf`: Hugging Face `datasets` and `transformers`)."""
