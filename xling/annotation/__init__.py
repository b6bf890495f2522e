"""From no labels to labels: active selection of sentences, and a page to label them on."""
