"""Request and response models shared by service/ and jobs/."""
